package importer

import (
	"strings"
	"testing"

	"github.com/spinehq/spine/streams"
)

// Every line type Claude Code writes is known: recorded (a prompt typed
// while a turn ran, an attachment of type queued_command) or deliberately
// passed over (docs/counting.md lists them); only a type spine does not
// know is reported, as unknown.
func TestTranscriptLineTypes(t *testing.T) {
	sink := &memSink{}
	sum := run(t, sink, Options{}, "testdata/linetypes")
	if sum.SkippedTotal != 1 || sum.Skipped[0].Line != 32 || !strings.Contains(sum.Skipped[0].Reason, `unknown line type "telemetry-beacon"`) {
		t.Fatalf("skipped %+v", sum.Skipped)
	}
	if start := sink.of("lt-1", streams.TypeSessionStart); len(start) != 1 || start[0].Prompt != "list the files" {
		t.Fatalf("start %+v", start)
	}
	var prose strings.Builder
	for _, c := range sink.of("lt-1", streams.TypeSessionChunk) {
		prose.WriteString(c.Text)
	}
	if got := prose.String(); got != "Looking.\n\n> also count them\n" {
		t.Fatalf("prose %q", got)
	}
	if s := sessionOf(t, sum, "lt-1"); s.Responses != 1 || s.Tokens != (report(streams.Usage{InputTokens: 3, OutputTokens: 4})) {
		t.Fatalf("session %+v", s)
	}
}
