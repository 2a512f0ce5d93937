package importer

import (
	"testing"

	"github.com/spinehq/spine/streams"
)

// outcomeEvents imports testdata/outcomes and returns out-1's events by action.
func outcomeEvents(t *testing.T) (*memSink, map[string]*streams.Event) {
	t.Helper()
	sink := &memSink{}
	sum := run(t, sink, Options{}, "testdata/outcomes")
	if sum.SkippedTotal != 0 {
		t.Fatalf("skipped %+v", sum.Skipped)
	}
	got := map[string]*streams.Event{}
	for _, c := range sink.of("out-1", streams.TypeSessionChunk) {
		if c.Event != nil {
			got[c.Event.Action] = c.Event
		}
	}
	if len(got) != 4 {
		t.Fatalf("events %+v", got)
	}
	return sink, got
}

// A Claude Code MCP call keeps its arguments, and a tool error (is_error)
// says the call failed rather than looking like a success.
func TestTranscriptMCPCallOutcome(t *testing.T) {
	_, got := outcomeEvents(t)
	if m := got["mcp_call"]; m.Server != "spine" || m.Tool != "search" || string(m.Arguments) != `{"q":"x","limit":3}` ||
		!m.IsError || m.Output != "no such index" || m.NoResult {
		t.Fatalf("mcp_call %+v", m)
	}
}
