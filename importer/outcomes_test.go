package importer

import (
	"bytes"
	"os"
	"path/filepath"
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

// A call whose result never came is recorded as having none: no empty
// output, exit code, or file of size 0 in its place.
func TestCallsWithoutResult(t *testing.T) {
	_, got := outcomeEvents(t)
	if c := got["command"]; c.Command != "sleep 100" || !c.NoResult || c.Output != "" || c.ExitCode != nil {
		t.Fatalf("command without a result %+v", c)
	}
	for _, a := range []string{"file_read", "file_write"} {
		if f := got[a]; f.Path == "" || !f.NoResult || !f.ContentUnknown || f.Content != "" || f.Size != nil || f.ContentDigest != "" {
			t.Fatalf("%s without a result %+v", a, f)
		}
	}
}

// The same for Codex: a real rollout cut right after each tool call (before
// its output) records that call as having no result; whole, none lacks one.
func TestCodexCallsWithoutResult(t *testing.T) {
	data, err := os.ReadFile(fixtures(t, "codex-rollout", "tomjnsn-agentlogs__codex_crud.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.SplitAfter(data, []byte("\n"))
	noResult := func(n int) (last *streams.Event, without int) {
		p := filepath.Join(t.TempDir(), "rollout.jsonl")
		if err := os.WriteFile(p, bytes.Join(lines[:n], nil), 0o600); err != nil {
			t.Fatal(err)
		}
		sink := &memSink{}
		run(t, sink, Options{}, p)
		for _, e := range sink.envs {
			if e.Event != nil {
				last = e.Event
				if e.Event.NoResult {
					without++
				}
			}
		}
		return last, without
	}
	if _, without := noResult(len(lines)); without != 0 {
		t.Fatalf("the whole rollout: %d calls without a result", without)
	}
	cuts := 0
	for i, l := range lines {
		if !bytes.Contains(l, []byte(`"type":"function_call"`)) && !bytes.Contains(l, []byte(`"type":"custom_tool_call"`)) {
			continue
		}
		cuts++
		last, without := noResult(i + 1)
		if last == nil || !last.NoResult || without != 1 || last.Output != "" || last.ExitCode != nil {
			t.Fatalf("cut after line %d: last event %+v, %d without a result", i+1, last, without)
		}
	}
	if cuts == 0 {
		t.Fatal("no tool call in the rollout")
	}
}

// A transcript says how the session ran: entrypoint sdk-cli (`claude -p`)
// is kind run, cli (the interactive app) kind open.
func TestTranscriptKind(t *testing.T) {
	sink, _ := outcomeEvents(t)
	for id, kind := range map[string]string{"out-1": "run", "out-2": "open"} {
		if st := sink.of(id, streams.TypeSessionStart); len(st) != 1 || st[0].Kind != kind {
			t.Fatalf("%s start %+v, want kind %s", id, st, kind)
		}
	}
}
