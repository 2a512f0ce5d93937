package recorder

import (
	"strings"
	"testing"
)

func TestRedact(t *testing.T) {
	cases := map[string]string{
		"Authorization: Bearer abc.def.ghi":                          "Authorization: [REDACTED]",
		"curl -H 'authorization: token123456' x":                     "curl -H 'authorization: [REDACTED]",
		"use Bearer eyJhbGciOiJIUzI1NiJ9xyz now":                     "use Bearer [REDACTED] now",
		"ANTHROPIC_API_KEY=sk-ant-api03-ABCDEFGHIJKLMNOPQRSTUV":      "ANTHROPIC_API_KEY=[REDACTED]",
		"key sk-proj-ABCDEFGHIJKLMNOPQRSTUV end":                     "key [REDACTED] end",
		`{"api_key": "abcd1234efgh"}`:                                `{"api_key": "[REDACTED]"}`,
		"password=hunter2hunter2":                                    "password=[REDACTED]",
		"token ghp_ABCDEFGHIJKLMNOPQRSTUVWXYZ0123":                   "token [REDACTED]",
		"aws AKIAABCDEFGHIJKLMNOP id":                                "aws [REDACTED] id",
		"slack xoxb-1234567890-abcdef":                               "slack [REDACTED]",
		"jwt eyJhbGciOiJI.eyJzdWIiOiIxMjM0.SflKxwRJSMeKKF2QT4fw end": "jwt [REDACTED] end",
		"plain prose about an API and a secret plan":                 "plain prose about an API and a secret plan",
		"héllo Bearer abcdefghijklmnop":                              "héllo Bearer [REDACTED]",
		"ＡＰＩ text with no secret":                                    "ＡＰＩ text with no secret",
	}
	for in, want := range cases {
		if got := Redact(in); got != want {
			t.Errorf("Redact(%q) = %q, want %q", in, got, want)
		}
	}
}

// FuzzRedact: redaction never panics, is idempotent, and leaves no
// recognisable key behind.
func FuzzRedact(f *testing.F) {
	f.Add("Authorization: Bearer abcdefgh")
	f.Add("sk-ant-AAAAAAAAAAAAAAAAAAAA")
	f.Add("nothing to see")
	f.Add("pässword=ÄÖÜ12345")
	f.Fuzz(func(t *testing.T, s string) {
		once := Redact(s)
		if twice := Redact(once); twice != once {
			t.Fatalf("not idempotent: %q → %q → %q", s, once, twice)
		}
		for _, p := range secretPatterns[3:] { // the shapes with no label
			if loc := p.re.FindStringIndex(once); loc != nil && !strings.Contains(once[loc[0]:loc[1]], Redacted) {
				t.Fatalf("%q still holds %q", once, once[loc[0]:loc[1]])
			}
		}
	})
}
