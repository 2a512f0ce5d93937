package recorder

import (
	"regexp"
	"strings"
	"unicode/utf8"
)

// Redacted replaces every secret the recorder finds in content.
const Redacted = "[REDACTED]"

// secretPattern is a regexp with the words a match must contain. Checking
// the words first makes clean text (nearly all of it) cost a few substring
// searches instead of nine backtracking scans. Non-ASCII text, where case
// folding could outwit the words, always gets every scan.
type secretPattern struct {
	re    *regexp.Regexp
	hints []string // lower-case ASCII; a match needs one of them in the lower-cased text
}

var secretPatterns = []secretPattern{
	{regexp.MustCompile(`(?i)(authorization\s*[:=]\s*)(?:"[^"\n]*"|'[^'\n]*'|[^\r\n]+)`), []string{"authorization"}},
	{regexp.MustCompile(`(?i)(\bbearer\s+)[A-Za-z0-9\-._~+/]{8,}=*`), []string{"bearer"}},
	{regexp.MustCompile(`(?i)((?:api[_-]?key|x-api-key|access[_-]?token|auth[_-]?token|secret[_-]?key|client[_-]?secret|password)["']?\s*[:=]\s*["']?)[^\s"',;&]{4,}`), []string{"api", "access", "auth", "secret", "password"}},
	{regexp.MustCompile(`()\bsk-(?:ant-|proj-)?[A-Za-z0-9_\-]{16,}`), []string{"sk-"}},
	{regexp.MustCompile(`()\b(?:ghp|gho|ghu|ghs|ghr|github_pat)_[A-Za-z0-9_]{20,}`), []string{"ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"}},
	{regexp.MustCompile(`()\bxox[abprs]-[A-Za-z0-9\-]{10,}`), []string{"xox"}},
	{regexp.MustCompile(`()\bAKIA[0-9A-Z]{16}\b`), []string{"akia"}},
	{regexp.MustCompile(`()\bAIza[0-9A-Za-z_\-]{35}\b`), []string{"aiza"}},
	{regexp.MustCompile(`()\beyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}`), []string{"eyj"}},
}

// Redact removes credentials from s. Text without any is returned as is.
func Redact(s string) string {
	ascii := isASCII(s)
	lower := ""
	if ascii {
		lower = strings.ToLower(s)
	}
	for _, p := range secretPatterns {
		if ascii && !containsAny(lower, p.hints) {
			continue
		}
		r := p.re.ReplaceAllString(s, "${1}"+Redacted)
		if r != s && ascii {
			s, lower = r, strings.ToLower(r)
		}
		s = r
	}
	return s
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

func containsAny(s string, subs []string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

// RedactBytes is Redact for raw message bytes (dead letters).
func RedactBytes(b []byte) []byte {
	out := []byte(Redact(string(b)))
	return out
}
