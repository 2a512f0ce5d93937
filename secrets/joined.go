package secrets

import "strings"

// Joined redacts parts as if they were one text and returns each part's
// share of the result: a secret the producer cut in two (the end of one
// chunk, the start of the next) is replaced in both pieces, so a reader
// that assembles them sees neither. Parts are returned one for one, so a
// caller keeps its chunk boundaries.
//
// A piece the door redacted alone ends in Redacted; the next piece then
// begins with the secret's raw tail, which joined to "[REDACTED]" no rule
// recognises. So where a piece ends in Redacted, the run of secret
// characters ([A-Za-z0-9+/=_.-]) that begins the next piece is replaced
// too, even when it was harmless text that happened to follow.
//
// The limit: each piece is stored as it arrived, after redaction on its
// own. A piece that no rule recognises alone (the second half of a key,
// which carries no prefix) stays in the log and in its chunk row; only the
// reads that assemble the chunks, through Joined, never show it.
func Joined(parts []string) []string { return Default().Joined(parts) }

// Joined is the package's Joined for r.
func (r *Redactor) Joined(parts []string) []string {
	total := 0
	for _, p := range parts {
		total += len(p)
	}
	buf := make([]byte, 0, total)
	for _, p := range parts {
		buf = append(buf, p...)
	}
	spans := r.find(string(buf))
	out := make([]string, len(parts))
	start, changed := 0, len(spans) > 0
	for i, p := range parts {
		out[i] = redactWindow(p, start, spans)
		start += len(p)
		if i > 0 && strings.HasSuffix(out[i-1], Redacted) {
			if n := secretRun(out[i]); n > 0 {
				out[i], changed = Redacted+out[i][n:], true
			}
		}
	}
	if !changed {
		return parts
	}
	return out
}

// secretRun is the length of the run of characters a key is made of at
// the start of s. A piece that is only "[REDACTED]" is no run: the chain
// of redactions stops at a piece made only of the marker.
func secretRun(s string) int {
	if strings.HasPrefix(s, Redacted) {
		return 0
	}
	n := 0
	for n < len(s) && isSecretByte(s[n]) {
		n++
	}
	return n
}

func isSecretByte(c byte) bool {
	return 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || strings.IndexByte("+/=_.-", c) >= 0
}

// redactWindow applies the spans (offsets in the joined text) to the part
// that begins at offset start.
func redactWindow(p string, start int, spans []span) string {
	var local []span
	end := start + len(p)
	for _, sp := range spans {
		if sp.end <= start || sp.start >= end {
			continue
		}
		local = append(local, span{max(sp.start, start) - start, min(sp.end, end) - start})
	}
	if len(local) == 0 {
		return p
	}
	return replace(p, local)
}
