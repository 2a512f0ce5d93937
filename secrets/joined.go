package secrets

// Joined redacts parts as if they were one text and returns each part's
// share of the result: a secret the producer cut in two (the end of one
// chunk, the start of the next) is replaced in both pieces, so a reader
// that assembles them sees neither. Parts are returned one for one, so a
// caller keeps its chunk boundaries.
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
	if len(spans) == 0 {
		return parts
	}
	out := make([]string, len(parts))
	start := 0
	for i, p := range parts {
		out[i] = redactWindow(p, start, spans)
		start += len(p)
	}
	return out
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
