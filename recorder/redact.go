package recorder

import "regexp"

// Redacted replaces every secret the recorder finds in content.
const Redacted = "[REDACTED]"

// secretPatterns find credentials in text: bearer tokens, Authorization
// headers, well-known API key shapes and key=value assignments. Each match
// keeps its leading label (group 1) so a reader sees what was removed.
var secretPatterns = []*regexp.Regexp{
	regexp.MustCompile(`(?i)(authorization\s*[:=]\s*)(?:"[^"\n]*"|'[^'\n]*'|[^\r\n]+)`),
	regexp.MustCompile(`(?i)(\bbearer\s+)[A-Za-z0-9\-._~+/]{8,}=*`),
	regexp.MustCompile(`(?i)((?:api[_-]?key|x-api-key|access[_-]?token|auth[_-]?token|secret[_-]?key|client[_-]?secret|password)["']?\s*[:=]\s*["']?)[^\s"',;&]{4,}`),
	regexp.MustCompile(`()\bsk-(?:ant-|proj-)?[A-Za-z0-9_\-]{16,}`),
	regexp.MustCompile(`()\b(?:ghp|gho|ghu|ghs|ghr|github_pat)_[A-Za-z0-9_]{20,}`),
	regexp.MustCompile(`()\bxox[abprs]-[A-Za-z0-9\-]{10,}`),
	regexp.MustCompile(`()\bAKIA[0-9A-Z]{16}\b`),
	regexp.MustCompile(`()\bAIza[0-9A-Za-z_\-]{35}\b`),
	regexp.MustCompile(`()\beyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}`),
}

// Redact removes credentials from s. Text without any is returned as is.
func Redact(s string) string {
	for _, re := range secretPatterns {
		s = re.ReplaceAllString(s, "${1}"+Redacted)
	}
	return s
}

// RedactBytes is Redact for raw message bytes (dead letters).
func RedactBytes(b []byte) []byte {
	out := []byte(Redact(string(b)))
	return out
}
