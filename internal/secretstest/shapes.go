// Package secretstest holds the credential shapes spine must never store,
// for the tests of the redactor and of every door.
package secretstest

// Shape is a credential as it shows up in text, and the part of it that
// must not survive redaction.
type Shape struct {
	Name   string
	Text   string
	Secret string
}

// Shapes is every secret shape the redactor must catch: each one an earlier
// redactor let through, and the older ones.
var Shapes = []Shape{
	{"aws secret, spaced", "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYzEXAMPLEKEY", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzEXAMPLEKEY"},
	{"aws secret, env", "AWS_SECRET_ACCESS_KEY=Zq8vLmN3pR7sT1uW4xY6zA9bC2dE5fG0hJ3kM6nP", "Zq8vLmN3pR7sT1uW4xY6zA9bC2dE5fG0hJ3kM6nP"},
	{"aws session key id", "key id ASIAQX7ZPL4MNB2VRT5K here", "ASIAQX7ZPL4MNB2VRT5K"},
	{"aws key id", "key id AKIAQX7ZPL4MNB2VRT5J here", "AKIAQX7ZPL4MNB2VRT5J"},
	{"anthropic", "ANTHROPIC_API_KEY=sk-ant-api03-Qm9uZXlNYWtlc1RoZVdvcmxkR29Sb3VuZA", "Qm9uZXlNYWtlc1RoZVdvcmxkR29Sb3VuZA"},
	{"github", "token ghp_R4nd0mT0k3nV4lu3Th4tL00ksR34l1234", "R4nd0mT0k3nV4lu3Th4tL00ksR34l1234"},
	{"slack", "slack xoxb-1234567890-abcdefGHIJKL", "1234567890-abcdefGHIJKL"},
	{"jwt", "jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV", "SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV"},
	{"bearer", "curl -H 'Authorization: Bearer c2VjcmV0LWJlYXJlci10b2tlbi12YWx1ZQ' https://api.example.com/v1", "c2VjcmV0LWJlYXJlci10b2tlbi12YWx1ZQ"},
	{"basic, json", `{"authorization": "Basic dXNlcjpzM2NyM3RQYXNzd29yZA=="}`, "dXNlcjpzM2NyM3RQYXNzd29yZA=="},
	{"url credentials", "git clone https://deploy:Pa55w0rdInUrl9@git.example.com/repo.git", "Pa55w0rdInUrl9"},
	{"password", "password=hunter2hunter2", "hunter2hunter2"},
	{"pem private key", "-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA0Z3VS5JJcds3xfnygWyF8PbnGy0AHB7MhgHcTz6sE2I2yPB\naFDrBz9vFqU4yMzvbqTVeDXVS4eE2bdpL9BYUY1eXkpKGDFuvv4gU7CnbJ9nESD\n-----END RSA PRIVATE KEY-----", "MIIEpAIBAAKCAQEA0Z3VS5JJcds3xfny"},
}

// All is every shape's text on its own line.
func All() string {
	s := ""
	for _, sh := range Shapes {
		s += sh.Text + "\n"
	}
	return s
}
