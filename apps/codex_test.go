package apps

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/spinehq/spine/streams"
)

// An apply_patch's added file's content, which the patch holds, is known;
// an updated file's, of which it holds only hunks, is unknown; a deleted
// file is no write.
func TestPatchEvents(t *testing.T) {
	evs := patchEvents("*** Begin Patch\n*** Add File: a.txt\n+one\n+two\n*** Update File: b.txt\n@@\n-x\n+y\n" +
		"*** Add File: empty.txt\n*** Delete File: c.txt\n*** End Patch")
	if len(evs) != 3 || evs[0].Content != "one\ntwo\n" || evs[0].ContentUnknown ||
		evs[1].Path != "b.txt" || !evs[1].ContentUnknown || evs[1].Content != "" ||
		evs[2].Path != "empty.txt" || evs[2].Content != "" || evs[2].ContentUnknown {
		t.Fatalf("patch events: %+v %+v %+v", evs[0], evs[1], evs[2])
	}
}

// commandRollout is a rollout of three exec_command calls and their
// results: Codex's exec header around a long output (exit code in the
// header), the JSON {"output", "metadata": {"exit_code"}} of other
// versions, and a CommandExecution item_completed (0.171 on) before the
// function_call_output it makes redundant.
func commandRollout(long string) []string {
	q := func(s string) string { b, _ := json.Marshal(s); return string(b) }
	header := "Chunk ID: c1\nWall time: 0.05 seconds\nProcess exited with code 3\nOriginal token count: 9\nOutput:\n"
	wrapped := `{"output":"done\n","metadata":{"exit_code":2}}`
	call := func(id, cmd string) string {
		return `{"timestamp":"2026-01-25T10:32:01Z","type":"response_item","payload":{"type":"function_call","name":"exec_command",` +
			`"arguments":` + q(`{"cmd":"`+cmd+`"}`) + `,"call_id":"` + id + `"}}`
	}
	output := func(id, out string) string {
		return `{"timestamp":"2026-01-25T10:32:02Z","type":"response_item","payload":{"type":"function_call_output","call_id":"` +
			id + `","output":` + q(out) + `}}`
	}
	return []string{
		`{"timestamp":"2026-01-25T10:32:00Z","type":"session_meta","payload":{"id":"s-commands","cwd":"/w","originator":"codex_cli_rs"}}`,
		call("c1", "cat big"), output("c1", header+long),
		call("c2", "make"), output("c2", wrapped),
		call("c3", "false"),
		`{"timestamp":"2026-01-25T10:32:03Z","type":"event_msg","payload":{"type":"item_completed","item":{"type":"CommandExecution",` +
			`"id":"c3","status":"failed","aggregated_output":"no\n","exit_code":1}}}`,
		output("c3", "Process exited with code 1\nOutput:\nno\n"),
		`{"timestamp":"2026-01-25T10:32:04Z","type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":` +
			`{"input_tokens":10,"cached_input_tokens":0,"output_tokens":2,"reasoning_output_tokens":0,"total_tokens":12}}}}`,
	}
}

// translateRollout translates lines as one rollout file and returns what
// was published.
func translateRollout(tb testing.TB, lines []string) []*streams.Envelope {
	ctx := context.Background()
	sink := &memSink{}
	tr := NewTranslator(Options{Owner: streams.Owner{Org: "o", Member: "m"}, Sink: sink})
	st := tr.Stream(Source{Path: "/h/.codex/sessions/2026/01/25/rollout-commands.jsonl", ModTime: time.Now(), Format: FormatCodexRollout})
	for i, l := range lines {
		if _, err := st.Record(ctx, Record{N: i + 1, Data: []byte(l)}); err != nil {
			tb.Fatal(err)
		}
	}
	if err := st.Done(ctx); err != nil {
		tb.Fatal(err)
	}
	if err := tr.Finish(ctx); err != nil {
		tb.Fatal(err)
	}
	return sink.envs
}

// A command's output and exit code are the result's, in each shape Codex
// writes it: the exec header's text whole with the code it states, the
// wrapped JSON's output with its metadata's code, the CommandExecution's
// own output and code.
func TestCodexCommandResults(t *testing.T) {
	long := strings.Repeat("a line of a long listing\n", 2000)
	var got []*streams.Event
	for _, e := range translateRollout(t, commandRollout(long)) {
		if e.Event != nil && e.Event.Action == "command" {
			got = append(got, e.Event)
		}
	}
	code := func(e *streams.Event) int {
		if e.ExitCode == nil {
			return -1
		}
		return *e.ExitCode
	}
	if len(got) != 3 || got[0].Command != "cat big" || !strings.HasSuffix(got[0].Output, "Output:\n"+long) || code(got[0]) != 3 ||
		got[1].Output != "done\n" || code(got[1]) != 2 || got[2].Output != "no\n" || code(got[2]) != 1 {
		for _, e := range got {
			t.Logf("%s: %d bytes, exit %d", e.Command, len(e.Output), code(e))
		}
		t.Fatalf("%d command events", len(got))
	}
}

// BenchmarkCodexCommandResults is the translation of a rollout whose
// command printed 1 MB: its output is decoded once.
func BenchmarkCodexCommandResults(b *testing.B) {
	lines := commandRollout(strings.Repeat("a line of a long listing\n", 40000))
	var size int64
	for _, l := range lines {
		size += int64(len(l))
	}
	b.SetBytes(size)
	b.ReportAllocs()
	for b.Loop() {
		translateRollout(b, lines)
	}
}

// A rollout line is decoded in one pass, and a line that pass cannot take
// is passed over for the reason two passes give.
func TestDecodeRollout(t *testing.T) {
	for _, c := range []struct{ line, skip, typ, payloadType string }{
		{`{"timestamp":"t","type":"response_item","payload":{"type":"message","role":"user"}}`, "", "response_item", "message"},
		{`{"type":"event_msg","payload":null}`, "", "event_msg", ""},
		{`{"type":"event_msg"}`, "rollout line without a payload object", "", ""},
		{`{"type":"event_msg","payload":"x"}`, "rollout line without a payload object", "", ""},
		{`{"type":"event_msg","payload":{"type":7}}`, "rollout line without a payload object", "", ""},
		{`[1]`, "not a rollout line", "", ""},
	} {
		var l rolloutLine
		var pl rolloutPayload
		skip := decodeRollout([]byte(c.line), &l, &pl)
		if !strings.HasPrefix(skip, c.skip) || c.skip == "" && skip != "" ||
			c.skip == "" && (l.Type != c.typ || pl.Type != c.payloadType) {
			t.Errorf("%s: skip %q, type %q, payload %q; want %q", c.line, skip, l.Type, pl.Type, c.skip)
		}
	}
}
