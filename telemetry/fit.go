package telemetry

import (
	"unicode/utf8"

	"github.com/spinehq/spine/streams"
)

// fit holds what an app named to the envelope's bounds (streams/limits.go),
// each cut at a character: the app's own words, which past a bound would
// cost the whole event (a request's tokens and cost with its 300-character
// model name). A hook's event (its command, path, URL) is not cut: one
// past its bound (no real one is) would name something else.
func fit(t *streams.Telemetry) {
	t.Model, t.Effort = cut(t.Model, streams.MaxNameLen), cut(t.Effort, streams.MaxNameLen)
	t.QuerySource, t.Tool = cut(t.QuerySource, streams.MaxNameLen), cut(t.Tool, streams.MaxNameLen)
	t.ErrorType, t.Reason = cut(t.ErrorType, streams.MaxNameLen), cut(t.Reason, streams.MaxReasonLen)
}

// cut is s in at most n bytes, ending on a whole character.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
