// Package secrets removes credentials from text before spine stores it.
//
// Every door that takes text from outside (HTTP ingest, streams.Publisher
// for trusted NATS producers, the runner routes, remote-session create and
// send over HTTP and MCP) passes each free-text field through String, and
// each raw JSON report through JSON, before anything is published: the log
// on disk, the projections and the logs never see the raw secret.
//
// Only the secret itself is replaced; the label around it stays, so a curl
// command keeps its URL and a JSON document stays valid JSON:
//
//	secrets.String(`curl -H "Authorization: Bearer abc123def456" https://x/`)
//	// curl -H "Authorization: Bearer [REDACTED]" https://x/
//
// The rules are gitleaks' default rule set (its config package, compiled
// once on first use) plus spine's own patterns for the shapes that set
// leaves alone: labelled values (authorization headers, *_API_KEY=,
// password:, aws_secret_access_key =), URL credentials, PEM private key
// bodies and bare token prefixes. Each rule carries keywords; one
// Aho-Corasick pass over the lower-cased text decides which rules run, so
// clean text costs one scan whatever the number of rules.
//
// Redaction works on one string at a time. A secret cut in two by the
// producer (the end of one chunk and the start of the next) is caught where
// the pieces are joined, by Joined; see its comment for the limit.
package secrets
