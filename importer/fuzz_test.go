package importer

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/spinehq/spine/apps"
)

// fuzzFormat imports arbitrary bytes as one format: it must never panic,
// never stop on bad input, and publish only valid envelopes (memSink and
// the importer both validate each one).
func fuzzFormat(f *testing.F, format apps.Format, seeds ...string) {
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(t.TempDir(), "in.jsonl")
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		for _, fm := range []apps.Format{format, ""} {
			if _, err := Import(context.Background(), []string{path}, Options{Format: fm, Sink: &memSink{}}); err != nil {
				t.Fatalf("format %q: %v", fm, err)
			}
		}
	})
}

func FuzzClaudeStream(f *testing.F) {
	fuzzFormat(f, apps.FormatClaudeStream,
		`{"type":"system","subtype":"init","session_id":"s","cwd":"/w"}`+"\n"+`{"type":"result","is_error":true,"total_cost_usd":1,"usage":{"input_tokens":1}}`,
		`[{"type":"assistant","message":{"id":"m","content":[{"type":"tool_use","id":"t","name":"Bash","input":{"command":"x"}}]}}]`)
}

func FuzzClaudeTranscript(f *testing.F) {
	fuzzFormat(f, apps.FormatClaudeTranscript,
		`{"type":"assistant","sessionId":"s","uuid":"u","requestId":"r","message":{"id":"m","model":"x","content":[{"type":"text","text":"hi"}],"usage":{"output_tokens":1}}}`,
		`{"type":"user","sessionId":"s","message":{"content":[{"type":"tool_result","tool_use_id":"t","content":[{"type":"text","text":"o"}]}]},"toolUseResult":{"originalFile":"a"}}`)
}

func FuzzCodexExec(f *testing.F) {
	fuzzFormat(f, apps.FormatCodexExec,
		`{"type":"thread.started","thread_id":"t"}`+"\n"+`{"type":"turn.started"}`,
		`{"type":"item.completed","item":{"id":"i","type":"file_change","changes":[{"path":"p","kind":"add"}]}}`+"\n"+`{"type":"turn.completed","usage":{"input_tokens":5,"cached_input_tokens":9}}`,
		`{"type":"item.completed","item":{"id":"i","type":"mcp_tool_call","server":"s","tool":"t","arguments":{"k":"\ud800"},"result":{"content":[{"type":"text","text":"x"}]},"status":"failed"}}`)
}

func FuzzCodexRollout(f *testing.F) {
	fuzzFormat(f, apps.FormatCodexRollout,
		`{"timestamp":"2026-01-01T00:00:00Z","type":"session_meta","payload":{"id":"s","cwd":"/w"}}`,
		`{"type":"response_item","payload":{"type":"custom_tool_call","name":"apply_patch","call_id":"c","input":"*** Begin Patch\n*** Add File: a\n+x\n*** End Patch"}}`+"\n"+
			`{"type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":{"input_tokens":3}}}}`,
		`{"type":"session_meta","payload":{"id":"s","creator_account_id":"a"}}`+"\n"+
			`{"type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"p"}],"internal_chat_message_metadata_passthrough":{"content_item_metadata":[{"provenance":{"type":"user"}}]}}}`+"\n"+
			`{"type":"response_item","payload":{"type":"function_call","name":"t","namespace":"mcp__s","arguments":"{\"k\":1}","call_id":"c"}}`+"\n"+
			`{"type":"event_msg","payload":{"type":"item_completed","item":{"type":"McpToolCall","id":"c","status":"failed","result":{"content":[],"isError":true}}}}`+"\n"+
			`{"type":"response_item","payload":{"type":"tool_search_call","call_id":"d","arguments":{"query":"q"}}}`+"\n"+
			`{"type":"response_item","payload":{"type":"custom_tool_call","name":"apply_patch","call_id":"e","input":""}}`+"\n"+
			`{"type":"event_msg","payload":{"type":"item_completed","item":{"type":"FileChange","id":"e","status":"completed","changes":{"/a":{"type":"add","content":"x"},"":{"type":"update"}}}}}`+"\n"+
			`{"type":"world_state","payload":{}}`)
}
