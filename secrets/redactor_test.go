package secrets

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/spinehq/spine/internal/secretstest"
)

func TestShapesAreRedacted(t *testing.T) {
	for _, sh := range secretstest.Shapes {
		for _, in := range []string{sh.Text, "before " + sh.Text + " after", "line1\n" + sh.Text + "\nline3", secretstest.All()} {
			got := String(in)
			if strings.Contains(got, sh.Secret) {
				t.Errorf("%s: String(%q) = %q keeps the secret", sh.Name, in, got)
			}
			if !strings.Contains(got, Redacted) {
				t.Errorf("%s: String(%q) = %q redacted nothing", sh.Name, in, got)
			}
		}
	}
}

func TestOnlyTheSecretGoes(t *testing.T) {
	cases := map[string]string{
		"Authorization: Bearer abc.def.ghi":                                "Authorization: Bearer [REDACTED]",
		"curl -H 'authorization: token123456' x":                           "curl -H 'authorization: [REDACTED]' x",
		`curl -H "Authorization: Bearer abcdefgh12345678" https://api/x`:   `curl -H "Authorization: Bearer [REDACTED]" https://api/x`,
		`{"authorization": "Basic dXNlcjpwYXNzd29yZA=="}`:                  `{"authorization": "Basic [REDACTED]"}`,
		"use Bearer eyJhbGciOiJIUzI1NiJ9xyz now":                           "use Bearer [REDACTED] now",
		"ANTHROPIC_API_KEY=sk-ant-api03-ABCDEFGHIJKLMNOPQRSTUV":            "ANTHROPIC_API_KEY=[REDACTED]",
		"key sk-proj-ABCDEFGHIJKLMNOPQRSTUV end":                           "key [REDACTED] end",
		`{"api_key": "abcd1234efgh"}`:                                      `{"api_key": "[REDACTED]"}`,
		"password=hunter2hunter2":                                          "password=[REDACTED]",
		"token ghp_ABCDEFGHIJKLMNOPQRSTUVWXYZ0123":                         "token [REDACTED]",
		"aws AKIAABCDEFGHIJKLMNOP id":                                      "aws [REDACTED] id",
		"aws ASIAABCDEFGHIJKLMNOP id":                                      "aws [REDACTED] id",
		"slack xoxb-1234567890-abcdef":                                     "slack [REDACTED]",
		"jwt eyJhbGciOiJI.eyJzdWIiOiIxMjM0.SflKxwRJSMeKKF2QT4fw end":       "jwt [REDACTED] end",
		"aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY": "aws_secret_access_key = [REDACTED]",
		"AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY":   "AWS_SECRET_ACCESS_KEY=[REDACTED]",
		"git clone https://me:s3cretpass@github.com/o/r.git now":           "git clone https://me:[REDACTED]@github.com/o/r.git now",
		"-----BEGIN PRIVATE KEY-----\nMIIBVgIBADANBgkqhkiG9w0BAQEFAASCAUAwggE8AgEAAkEA\n-----END PRIVATE KEY-----\nnext": "-----BEGIN PRIVATE KEY-----[REDACTED]-----END PRIVATE KEY-----\nnext",
		"plain prose about an API and a secret plan": "plain prose about an API and a secret plan",
		"héllo Bearer abcdefghijklmnop":              "héllo Bearer [REDACTED]",
		"ＡＰＩ text with no secret":                    "ＡＰＩ text with no secret",
		"ſecret_key=abcdefgh1234":                    "ſecret_key=[REDACTED]",
	}
	for in, want := range cases {
		if got := String(in); got != want {
			t.Errorf("String(%q)\n got %q\nwant %q", in, got, want)
		}
	}
}

func TestJSONStaysValid(t *testing.T) {
	in := []byte(`{"v":1,"type":"session.chunk","text":"curl -H \"Authorization: Bearer abcdefgh12345678\" https://api/x","usage":{"authorization":"Basic dXNlcjpwYXNzd29yZA==","n":3,"note":"password=hunter2hunter2"}}`)
	out := JSON(in)
	if !json.Valid(out) {
		t.Fatalf("JSON(%s) = %s: not JSON", in, out)
	}
	var got struct {
		Text  string
		Usage map[string]any
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatal(err)
	}
	if got.Text != `curl -H "Authorization: Bearer [REDACTED]" https://api/x` {
		t.Errorf("text = %q", got.Text)
	}
	if got.Usage["authorization"] != "Basic [REDACTED]" || got.Usage["note"] != "password=[REDACTED]" || got.Usage["n"] != 3.0 {
		t.Errorf("usage = %v", got.Usage)
	}
	clean := []byte(`{"a": "nothing here", "b": [1, 2, "x"]}`)
	if out := JSON(clean); string(out) != string(clean) {
		t.Errorf("clean JSON changed: %s", out)
	}
	if out := string(JSON([]byte(`not json password=hunter2hunter2`))); out != "not json password=[REDACTED]" {
		t.Errorf("text fallback = %q", out)
	}
}

func TestJoinedCatchesASplitKey(t *testing.T) {
	key := "sk-ant-api03-Qm9uZXlNYWtlc1RoZVdvcmxkR29Sb3VuZA"
	parts := []string{"export ANTHROPIC=" + key[:14], key[14:] + "\nnext line"}
	for i, p := range parts {
		if got := String(p); got != p {
			t.Fatalf("piece %d alone is redacted (%q): the split case needs pieces that are not", i, got)
		}
	}
	got := Joined(parts)
	if len(got) != 2 || got[0] != "export ANTHROPIC=[REDACTED]" || got[1] != "[REDACTED]\nnext line" {
		t.Fatalf("Joined = %q", got)
	}
	if clean := []string{"a", "b"}; &Joined(clean)[0] != &clean[0] {
		t.Error("clean parts were copied")
	}
}

// FuzzRedact: redaction never panics, is idempotent, never grows a clean
// text, and keeps valid JSON valid.
func FuzzRedact(f *testing.F) {
	for _, sh := range secretstest.Shapes {
		f.Add(sh.Text)
	}
	f.Add("nothing to see")
	f.Add("pässword=ÄÖÜ12345")
	f.Add(`{"authorization":"Bearer abcdefghijkl\"x"}`)
	f.Fuzz(func(t *testing.T, s string) {
		once := String(s)
		if twice := String(once); twice != once {
			t.Fatalf("not idempotent: %q → %q → %q", s, once, twice)
		}
		if json.Valid([]byte(s)) && !json.Valid(JSON([]byte(s))) {
			t.Fatalf("JSON(%q) = %q is not JSON", s, JSON([]byte(s)))
		}
	})
}

// TestAssignmentGateLosesNothing: rules that need an assignment run only
// around keywords with one nearby; at the template's widest reach (20
// label characters, 3 quotes, the longest assignment, 5 quotes) the gated
// redactor finds what the same rules find run everywhere.
func TestAssignmentGateLosesNothing(t *testing.T) {
	gated := Default()
	rules := append([]rule(nil), gated.rules...)
	for i := range rules {
		rules[i].assigns = false
	}
	ungated := newRedactor(rules)
	secret := "Zq8vLmN3pR7sT1uW4xY6zA9bC2dE5fG0hJ3kM6nP"
	var corpus []string
	for _, sh := range secretstest.Shapes {
		corpus = append(corpus, sh.Text)
	}
	for _, label := range []string{"api", "my_api_key", "access", "github_token", "stripe", "confluent", "twilio", "password", "ANTHROPIC_API_KEY"} {
		for _, op := range []string{"=", ":", ":::=", "=>", "||", "?=", ",", ">"} {
			corpus = append(corpus,
				label+op+secret,
				label+"_abcdefghijklmnopqrs\t'\"'"+op+"`'\" =\""+secret+"\"",
				"x "+label+strings.Repeat(" ", 16)+op+" "+secret+" y")
		}
	}
	for _, text := range corpus {
		if g, u := gated.String(text), ungated.String(text); g != u {
			t.Errorf("%q\n gated   %q\n ungated %q", text, g, u)
		}
	}
}

// Bytes that are not UTF-8 keep their length outside a secret: each bad
// byte stays one byte, so redaction cannot push a message over the log's
// size limit, and a secret among them still goes.
func TestInvalidUTF8IsNotGrown(t *testing.T) {
	plain := []byte(strings.Repeat("\xffA", 1000))
	if got := Bytes(plain); len(got) != len(plain) {
		t.Errorf("Bytes of %d invalid-UTF-8 bytes is %d bytes", len(plain), len(got))
	}
	in := []byte("\xff\xfe token ghp_ABCDEFGHIJKLMNOPQRSTUVWXYZ0123 \xff")
	if got, want := string(Bytes(in)), "\xff\xfe token [REDACTED] \xff"; got != want {
		t.Errorf("Bytes(%q) = %q, want %q", in, got, want)
	}
}

// TestJoinedCatchesATailAfterTheDoorsRedaction cuts each shape mid-secret
// where the door recognises the first half alone: the stored first piece
// ends in [REDACTED], the second begins with the raw tail.
func TestJoinedCatchesATailAfterTheDoorsRedaction(t *testing.T) {
	for _, c := range splitShapes {
		head, tail := c[:len(c)-12], c[len(c)-12:]
		stored := []string{String(head), String(tail + " and more")}
		if !strings.HasSuffix(stored[0], Redacted) || !strings.HasPrefix(stored[1], tail) {
			t.Fatalf("%q: not the case under test: stored %q", c, stored)
		}
		got := Joined(stored)
		if strings.Contains(strings.Join(got, ""), tail) || got[1] != Redacted+" and more" {
			t.Errorf("%q: Joined = %q", c, got)
		}
	}
}

// splitShapes are secrets whose first part alone is redacted at the door.
var splitShapes = []string{
	"aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYzEXAMPLEKEYabcd",
	"password=Tr0ub4dor3horsebatterystaple99",
	"echo sk-ant-api03-Qm9uZXlNYWtlc1RoZVdvcmxkR29Sb3VuZA",
	"token ghp_Qm9uZXlNYWtlc1RoZVdvcmxkR29Sb3VuZA12",
}

// TestHeaderMapsAndArrays: Go's printed http.Header and JSON header
// arrays keep the scheme and lose the credential, nothing else.
func TestHeaderMapsAndArrays(t *testing.T) {
	for in, want := range map[string]string{
		"map[Authorization:[Basic dXNlcjpwYXNz] Accept:[*/*]]": "map[Authorization:[Basic [REDACTED]] Accept:[*/*]]",
		`"Authorization":["Basic dXNlcjpwYXNz"]`:               `"Authorization":["Basic [REDACTED]"]`,
		"Authorization: Bearer abcdefgh12345678":               "Authorization: Bearer [REDACTED]",
	} {
		if got := String(in); got != want {
			t.Errorf("String(%q) = %q, want %q", in, got, want)
		}
	}
	for in, want := range map[string]string{
		`{"headers":{"Authorization":["Basic dXNlcjpwYXNz"]}}`:           `{"headers":{"Authorization":["Basic [REDACTED]"]}}`,
		`{"Authorization":[["Basic dXNlcjpwYXNz"]],"x":["Basic plain"]}`: `{"Authorization":[["Basic [REDACTED]"]],"x":["Basic plain"]}`,
	} {
		if got := string(JSON([]byte(in))); got != want {
			t.Errorf("JSON(%s) = %s, want %s", in, got, want)
		}
	}
}

// TestLabelledValueTakesOnlyTheSecret: the value stops at '@', paths and
// counts are not secrets, a PEM header is never taken as a value, and an
// unterminated JSON-escaped PEM loses its body.
func TestLabelledValueTakesOnlyTheSecret(t *testing.T) {
	for in, want := range map[string]string{
		"https://x-access-token:gho_Qm9uZXlNYWtlc1RoZVdvcmxkR29S@github.com/o/r": "https://x-access-token:[REDACTED]@github.com/o/r",
		"PWD=/home/alice/project OLDPWD=/tmp":                                    "PWD=/home/alice/project OLDPWD=/tmp",
		"max_token: 4096, max_tokens=8192":                                       "max_token: 4096, max_tokens=8192",
		"password=hunter2hunter2":                                                "password=[REDACTED]",
	} {
		if got := String(in); got != want {
			t.Errorf("String(%q) = %q, want %q", in, got, want)
		}
	}
	body := "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7"
	for _, in := range []string{
		`{"private_key":"-----BEGIN PRIVATE KEY-----\n` + body + `\n-----END PRIVATE KEY-----\n"}`,
		`{"private_key":"-----BEGIN PRIVATE KEY-----\n` + body + `\nMore` + body,
	} {
		got := String(in)
		if strings.Contains(got, body[8:24]) || !strings.Contains(got, "-----BEGIN PRIVATE KEY-----") {
			t.Errorf("String(%q) = %q", in, got)
		}
	}
}
