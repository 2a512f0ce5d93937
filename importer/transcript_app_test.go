package importer

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/spinehq/spine/accounting"
	"github.com/spinehq/spine/apps"
	"github.com/spinehq/spine/internal/apprig"
	"github.com/spinehq/spine/internal/fakemodel"
	"github.com/spinehq/spine/streams"
)

// Tests of what the real Claude Code (2.1.197, `claude -p`) writes to its
// transcripts, against the fake model's log.

// appUsage is a realistic Anthropic usage, varied by n.
func appUsage(n int64) fakemodel.Usage {
	return fakemodel.Usage{Input: 3 + n, Output: 40 * n, CacheRead: 12000 * n, CacheWrite5m: 900 + n, CacheWrite1h: 50}
}

// appTurn is a main-thread turn.
func appTurn(n int64, blocks ...fakemodel.Block) fakemodel.Turn {
	return fakemodel.Turn{Blocks: blocks, Usage: appUsage(n), Match: fakemodel.MainThread}
}

// served is the fake model's log as spine reports tokens, and how many
// responses it served.
func served(srv *fakemodel.Server) (int, accounting.Tokens) {
	var t streams.Usage
	for _, s := range srv.Log() {
		t.Add(streams.Usage{InputTokens: s.Usage.Input, OutputTokens: s.Usage.Output, CacheReadTokens: s.Usage.CacheRead,
			CacheWriteTokens: s.Usage.CacheWrite5m + s.Usage.CacheWrite1h})
	}
	return len(srv.Log()), report(t)
}

// importTranscripts imports a run's transcripts and fails on any skipped
// line: every line type the app writes is known.
func importTranscripts(t *testing.T, res *apprig.ClaudeRun) (*memSink, *Summary) {
	t.Helper()
	sink := &memSink{}
	sum := run(t, sink, Options{Format: apps.FormatClaudeTranscript}, res.Transcripts...)
	if sum.SkippedTotal != 0 {
		t.Fatalf("skipped %+v", sum.Skipped)
	}
	return sink, sum
}

// lineTypes are the types of a transcript's lines.
func lineTypes(t *testing.T, path string) []string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var types []string
	for _, l := range bytes.Split(bytes.TrimSpace(data), []byte("\n")) {
		var v struct {
			Type string `json:"type"`
		}
		if json.Unmarshal(l, &v) == nil && !slices.Contains(types, v.Type) {
			types = append(types, v.Type)
		}
	}
	return types
}

// A `claude -p` session resumed once: its transcript's attachment,
// last-prompt, mode and queue-operation lines are known (nothing is
// reported unknown), it is a session of kind run, and its responses and
// tokens are the fake model's.
func TestAppTranscriptOfClaudeP(t *testing.T) {
	srv := fakemodel.Start(t)
	c := apprig.NewClaude(t, srv, nil)
	srv.Anthropic(appTurn(1, fakemodel.Thinking("greeting"), fakemodel.Text("hello")), appTurn(2, fakemodel.Text("again")))
	first := c.Run("say hello", nil)
	res := c.Run("once more", &apprig.RunOptions{Resume: first.SessionID})
	if res.ExitCode != 0 || len(res.Transcripts) != 1 {
		t.Fatalf("exit %d, transcripts %v\n%s", res.ExitCode, res.Transcripts, res.Stderr)
	}
	types := lineTypes(t, res.Transcripts[0])
	for _, want := range []string{"attachment", "last-prompt", "mode", "queue-operation"} {
		if !slices.Contains(types, want) {
			t.Fatalf("the transcript has no %s line (%v): the test proves nothing of it", want, types)
		}
	}
	sink, sum := importTranscripts(t, res)
	id := apps.SessionID("claude-code", res.SessionID)
	if st := sink.of(id, streams.TypeSessionStart); len(st) != 1 || st[0].Kind != "run" {
		t.Fatalf("start %+v, want one of kind run", st)
	}
	if n, tokens := served(srv); sum.Responses != n || sum.Tokens != tokens {
		t.Fatalf("imported %d responses %+v; the model served %d %+v", sum.Responses, sum.Tokens, n, tokens)
	}
}

// MCP calls keep their arguments and say which one failed: the rig's
// server's fail tool answers isError, which the transcript records as
// is_error on its tool_result.
func TestAppMCPCallOutcome(t *testing.T) {
	srv := fakemodel.Start(t)
	c := apprig.NewClaude(t, srv, &apprig.ClaudeOptions{MCP: true})
	srv.Anthropic(
		appTurn(1, fakemodel.Tool("mcp__spine__echo", map[string]any{"text": "ping"})),
		appTurn(2, fakemodel.Tool("mcp__spine__fail", map[string]any{"reason": "on purpose"})),
		appTurn(3, fakemodel.Text("done")),
	)
	res := c.Run("call the tools", nil)
	sink, _ := importTranscripts(t, res)
	var calls []*streams.Event
	for _, e := range sink.of(apps.SessionID("claude-code", res.SessionID), streams.TypeSessionChunk) {
		if e.Event != nil && e.Event.Action == "mcp_call" {
			calls = append(calls, e.Event)
		}
	}
	if len(calls) != 2 {
		t.Fatalf("mcp calls %+v", calls)
	}
	echo, fail := calls[0], calls[1]
	if echo.Tool != "echo" || echo.Server != "spine" || string(echo.Arguments) != `{"text":"ping"}` || echo.IsError || echo.NoResult {
		t.Errorf("echo %+v (arguments %s)", echo, echo.Arguments)
	}
	if fail.Tool != "fail" || string(fail.Arguments) != `{"reason":"on purpose"}` || !fail.IsError || fail.Output == "" {
		t.Errorf("fail %+v (arguments %s)", fail, fail.Arguments)
	}
}

// A session that ends inside a tool call (here the command kills the app
// itself, as a crash or a closed terminal would) leaves a tool_use with no
// tool_result: the call is recorded as having no result, not as a command
// that printed nothing. The Write before it, answered, is a write.
func TestAppCallWithoutResult(t *testing.T) {
	srv := fakemodel.Start(t)
	c := apprig.NewClaude(t, srv, nil)
	file := filepath.Join(c.Dir, "note.txt")
	// The app writes its transcript lines asynchronously: the command waits
	// until its own tool_use line (which holds the command, marker and all)
	// is on disk, so the write's result before it is too, then kills the app.
	kill := fmt.Sprintf("until grep -qs spine-stop-marker %s/*/*.jsonl; do sleep 0.05; done; kill -9 $PPID # spine-stop-marker",
		c.Projects())
	srv.Anthropic(
		appTurn(1, fakemodel.Tool("Write", map[string]any{"file_path": file, "content": "rig\n"})),
		appTurn(2, fakemodel.Tool("Bash", map[string]any{"command": kill, "description": "stop the app"})),
	)
	res := c.Run("write, then stop", nil)
	if res.ExitCode == 0 {
		t.Fatalf("the app was not stopped: %s", res.Stdout)
	}
	sink, _ := importTranscripts(t, res)
	got := map[string]*streams.Event{}
	for _, e := range sink.of(apps.SessionID("claude-code", res.SessionID), streams.TypeSessionChunk) {
		if e.Event != nil {
			got[e.Event.Action] = e.Event
		}
	}
	if w := got["file_write"]; w == nil || w.NoResult || w.Content != "rig\n" {
		t.Fatalf("the answered write %+v", w)
	}
	if cmd := got["command"]; cmd == nil || cmd.Command != kill || !cmd.NoResult || cmd.Output != "" || cmd.ExitCode != nil {
		t.Fatalf("the unanswered command %+v", cmd)
	}
}

// A real multi-turn transcript cut into prefixes (split copies), imported
// in several orders, counts what the fake model served and publishes what
// the whole transcript alone does.
func TestAppSplitCopies(t *testing.T) {
	srv := fakemodel.Start(t)
	c := apprig.NewClaude(t, srv, nil)
	file := filepath.Join(c.Dir, "note.txt")
	srv.Anthropic(
		appTurn(1, fakemodel.Thinking("plan"), fakemodel.Text("writing"), fakemodel.Tool("Write", map[string]any{"file_path": file, "content": "rig\n"})),
		appTurn(2, fakemodel.Text("reading"), fakemodel.Tool("Read", map[string]any{"file_path": file})),
		appTurn(3, fakemodel.Text("done")),
	)
	res := c.Run("write and read a note", nil)
	if res.ExitCode != 0 {
		t.Fatalf("exit %d\n%s", res.ExitCode, res.Stderr)
	}
	data, err := os.ReadFile(res.Transcripts[0])
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.SplitAfter(data, []byte("\n"))
	if len(lines[len(lines)-1]) == 0 {
		lines = lines[:len(lines)-1]
	}
	dir := t.TempDir()
	var copies []string
	for n := 1; n <= len(lines); n++ {
		p := filepath.Join(dir, filepath.Base(res.Transcripts[0])+"."+string(rune('a'+n/26))+string(rune('a'+n%26))+".jsonl")
		if err := os.WriteFile(p, bytes.Join(lines[:n], nil), 0o600); err != nil {
			t.Fatal(err)
		}
		copies = append(copies, p)
	}
	n, tokens := served(srv)
	alone := &memSink{}
	run(t, alone, Options{Format: apps.FormatClaudeTranscript}, copies[len(copies)-1])
	for name, order := range copyOrders(copies) {
		got := &memSink{}
		sum := run(t, got, Options{Format: apps.FormatClaudeTranscript}, order...)
		if sum.Responses != n || sum.Tokens != tokens || sum.SkippedTotal != 0 {
			t.Errorf("%s: %d responses %+v (skipped %d); the model served %d %+v", name, sum.Responses, sum.Tokens,
				sum.SkippedTotal, n, tokens)
		}
		sameEnvelopes(t, name, got, alone)
	}
}
