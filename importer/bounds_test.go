package importer

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spinehq/spine/apps"
	"github.com/spinehq/spine/streams"
)

// A real file can hold more than a field's bound (a pasted prompt, a
// here-document command): the importer cuts free text with a marker, leaves
// out a name past its bound, and treats a time outside the envelope's
// range as absent, so the import goes through and the door takes it all.
func TestImportHoldsFieldsToTheirBounds(t *testing.T) {
	prompt := strings.Repeat("p", streams.MaxPromptLen+1000)
	command := strings.Repeat("c", streams.MaxCommandLen+1000)
	model := strings.Repeat("m", streams.MaxNameLen+1)
	line := func(v map[string]any) string { b, _ := json.Marshal(v); return string(b) }
	lines := []string{
		line(map[string]any{"type": "user", "sessionId": "big-1", "uuid": "b1", "timestamp": "2026-02-01T09:00:00Z", "cwd": "/w",
			"message": map[string]any{"role": "user", "content": prompt}}),
		line(map[string]any{"type": "assistant", "sessionId": "big-1", "uuid": "b2", "timestamp": "0000-01-01T00:00:00Z", "requestId": "r1",
			"message": map[string]any{"id": "m1", "model": model, "role": "assistant",
				"content": []any{map[string]any{"type": "tool_use", "id": "t1", "name": "Bash", "input": map[string]any{"command": command}}},
				"usage":   map[string]any{"input_tokens": 1, "output_tokens": 2}}}),
		line(map[string]any{"type": "user", "sessionId": "big-1", "uuid": "b3", "timestamp": "2026-02-01T09:00:02Z",
			"message": map[string]any{"role": "user", "content": []any{map[string]any{"type": "tool_result", "tool_use_id": "t1", "content": "ok"}}}}),
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "big.jsonl"), []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// memSink validates and decodes every envelope, as the door would; the
	// format is named because the first line is past what detection reads.
	sink := &memSink{}
	run(t, sink, Options{Format: apps.FormatClaudeTranscript}, dir)
	start := sink.of("big-1", streams.TypeSessionStart)
	if len(start) != 1 || len(start[0].Prompt) > streams.MaxPromptLen || !strings.HasSuffix(start[0].Prompt, apps.TruncatedMarker) {
		t.Fatalf("start prompt of %d bytes", len(start[0].Prompt))
	}
	var cmd *streams.Event
	for _, c := range sink.of("big-1", streams.TypeSessionChunk) {
		if c.Event != nil && c.Event.Action == "command" {
			cmd = c.Event
		}
	}
	if cmd == nil || len(cmd.Command) > streams.MaxCommandLen || !strings.HasSuffix(cmd.Command, apps.TruncatedMarker) {
		t.Fatalf("command event %v", cmd != nil)
	}
	end := sink.of("big-1", streams.TypeSessionEnd)
	if len(end) != 1 || end[0].Model != "" {
		t.Fatalf("end = %+v, want the model left out", end)
	}
}
