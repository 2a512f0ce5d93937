package importer

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spinehq/spine/streams"
)

// writes are the file_write events a session published, in order.
func writes(sink *memSink, sessionID string) []*streams.Event {
	var evs []*streams.Event
	for _, c := range sink.of(sessionID, streams.TypeSessionChunk) {
		if c.Event != nil && c.Event.Action == "file_write" {
			evs = append(evs, c.Event)
		}
	}
	return evs
}

// Writes whose content the source never carried say so (contentUnknown)
// instead of passing for empty files: Codex exec file_change items and
// apply_patch updates (apps.TestPatchEvents holds the patch's own rule).
func TestUnknownContentFromCodex(t *testing.T) {
	sink := &memSink{}
	run(t, sink, Options{}, fixtures(t, "codex-exec-json"), fixtures(t, "codex-rollout"))
	exec := writes(sink, "019a2d7a-8e1c-7111-b1a6-8cec551a55a0")
	if len(exec) != 1 || !exec[0].ContentUnknown || exec[0].Content != "" || exec[0].Size != nil ||
		exec[0].Path != "/private/tmp/codex-research-test/hello.txt" {
		t.Fatalf("exec file_change writes: %+v", exec)
	}
	rollout := writes(sink, "019bf4b5-e7b0-75a0-8bf2-05fbf1b13c9b")
	if len(rollout) != 1 || !rollout[0].ContentUnknown || !strings.HasSuffix(rollout[0].Path, "/JOKE.md") {
		t.Fatalf("rollout apply_patch writes: %+v", rollout)
	}
}

// A Claude Code Edit whose result kept the original file writes the edited
// content; one without it writes content unknown.
func TestUnknownContentFromClaudeEdit(t *testing.T) {
	sink := &memSink{}
	run(t, sink, Options{}, fixtures(t, "claude-transcripts", "tomjnsn-agentlogs__claudecode_crud.jsonl"))
	w := writes(sink, "8122657c-fe54-4dc9-89a3-20049e8a84f7")
	if len(w) != 2 || w[0].ContentUnknown || w[1].ContentUnknown || w[1].Content == "" {
		t.Fatalf("crud writes: %+v", w)
	}

	lines := []string{
		`{"type":"user","sessionId":"e1","uuid":"u1","timestamp":"2026-04-01T10:00:00Z","message":{"role":"user","content":"edit it"}}`,
		`{"type":"assistant","sessionId":"e1","uuid":"u2","timestamp":"2026-04-01T10:00:01Z","requestId":"r1","message":{"id":"m1","model":"claude-x","role":"assistant","content":[` +
			`{"type":"tool_use","id":"t1","name":"Edit","input":{"file_path":"/w/a.go","old_string":"x","new_string":"y"}}],"usage":{"input_tokens":1,"output_tokens":1}}}`,
		`{"type":"user","sessionId":"e1","uuid":"u3","timestamp":"2026-04-01T10:00:02Z","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"The file /w/a.go has been updated."}]}}`,
	}
	path := filepath.Join(t.TempDir(), "e1.jsonl")
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	sink = &memSink{}
	run(t, sink, Options{}, path)
	if w := writes(sink, "e1"); len(w) != 1 || !w[0].ContentUnknown || w[0].Content != "" || w[0].Path != "/w/a.go" {
		t.Fatalf("edit without originalFile: %+v", w)
	}
}

// A Write, Edit or Read whose result is an error records no file event: no
// file was changed or read, and the error text is no file's content. The
// session goes on: a later successful Write is recorded.
func TestFailedFileToolsRecordNothing(t *testing.T) {
	tool := func(uuid, id, name, input string) string {
		return `{"type":"assistant","sessionId":"f1","uuid":"` + uuid + `","timestamp":"2026-04-01T10:00:01Z","requestId":"r-` + id +
			`","message":{"id":"m-` + id + `","model":"claude-x","role":"assistant","content":[{"type":"tool_use","id":"` + id +
			`","name":"` + name + `","input":` + input + `}],"usage":{"input_tokens":1,"output_tokens":1}}}`
	}
	result := func(uuid, id, text string, isError bool) string {
		e := "false"
		if isError {
			e = "true"
		}
		return `{"type":"user","sessionId":"f1","uuid":"` + uuid + `","timestamp":"2026-04-01T10:00:02Z","message":{"role":"user","content":[` +
			`{"type":"tool_result","tool_use_id":"` + id + `","content":"` + text + `","is_error":` + e + `}]}}`
	}
	lines := []string{
		`{"type":"user","sessionId":"f1","uuid":"u0","timestamp":"2026-04-01T10:00:00Z","message":{"role":"user","content":"go"}}`,
		tool("u1", "t1", "Write", `{"file_path":"/w/a.go","content":"package a\n"}`),
		result("u2", "t1", "EACCES: permission denied", true),
		tool("u3", "t2", "Edit", `{"file_path":"/w/b.go","old_string":"x","new_string":"y"}`),
		result("u4", "t2", "String to replace not found in file.", true),
		tool("u5", "t3", "Read", `{"file_path":"/w/c.go"}`),
		result("u6", "t3", "File does not exist.", true),
		tool("u7", "t4", "Write", `{"file_path":"/w/a.go","content":"package a\n"}`),
		result("u8", "t4", "File created successfully at: /w/a.go", false),
	}
	path := filepath.Join(t.TempDir(), "f1.jsonl")
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	sink := &memSink{}
	sum := run(t, sink, Options{}, path)
	var events []*streams.Event
	for _, c := range sink.of("f1", streams.TypeSessionChunk) {
		if c.Event != nil {
			events = append(events, c.Event)
		}
	}
	if len(events) != 1 || events[0].Action != "file_write" || events[0].Path != "/w/a.go" || events[0].Content != "package a\n" {
		t.Fatalf("events: %+v", events)
	}
	if s := sessionOf(t, sum, "f1"); s.Responses != 4 || s.Status != "done" || sum.SkippedTotal != 0 {
		t.Fatalf("session %+v, skipped %+v", s, sum.Skipped)
	}
}
