package streams_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/spinehq/spine/streams"
)

// fixtures are valid version-1 envelopes, one per type: the contract as a
// producer would write it.
var fixtures = map[string]string{
	streams.TypeSessionStart: `{"v":1,"type":"session.start","id":"env-start-1","at":"2025-03-01T10:00:00Z",
		"sessionId":"s-1","app":"claude-code","kind":"run","level":"strong","workspace":"/home/ada/repo",
		"owner":{"org":"acme","member":"ada@acme.io"},"planId":"plan-1","taskId":"task-1","stepId":"step-1",
		"parentRunId":"run-0","workerId":"w-1","prompt":"fix the build"}`,
	streams.TypeSessionChunk: `{"v":1,"type":"session.chunk","id":"env-chunk-1","at":"2025-03-01T10:00:01.5+02:00",
		"sessionId":"s-1","seq":1,"stream":"stdout","text":"building…\n"}`,
	streams.TypeSessionControl: `{"v":1,"type":"session.control","id":"env-control-1","at":"2025-03-01T10:00:02Z",
		"sessionId":"s-1","control":"cancel","reason":"caller went away"}`,
	streams.TypeSessionEnd: `{"v":1,"type":"session.end","id":"env-end-1","at":"2025-03-01T10:05:00Z",
		"sessionId":"s-1","status":"done","exitCode":0,"model":"claude-sonnet-4","effort":"high",
		"usage":{"inputTokens":1200,"outputTokens":340,"cacheReadTokens":10,"cacheWriteTokens":5,"reasoningTokens":0,
			"raw":{"input_tokens":1200,"output_tokens":340}},
		"totalCost":0.0123,"billing":"metered","door":"session",
		"artifacts":[{"name":"patch.diff","content":"--- a\n+++ b\n"},{"name":"log.txt","contentDigest":"blake3:abababababababababababababababababababababababababababababababab","size":12}]}`,
	streams.TypeSessionUsage: `{"v":1,"type":"session.usage","id":"env-usage-1","at":"2025-03-01T10:04:00Z",
		"sessionId":"s-1","usage":{"inputTokens":900,"outputTokens":200,"cacheReadTokens":10,"cacheWriteTokens":5,"reasoningTokens":0},
		"totalCost":0.01}`,
	streams.TypeWorkerDisconnect: `{"v":1,"type":"worker.disconnect","id":"env-disc-1","at":"2025-03-01T10:06:00Z",
		"workerId":"w-1","reason":"heartbeat lost"}`,
	streams.TypeMCPCall: `{"v":1,"type":"mcp.call","id":"env-mcp-1","at":"2025-03-01T10:03:00Z",
		"sessionId":"s-1","callId":"call-1","server":"github","tool":"create_issue","status":"ok","durationMs":42}`,
	streams.TypeSessionTelemetry: `{"v":1,"type":"session.telemetry","id":"tel-1","at":"2025-03-01T10:02:00Z",
		"sessionId":"s-1","app":"claude-code","appSessionRef":"7f9c-session","owner":{"org":"acme","member":"ada@acme.io"},
		"billing":"metered","telemetry":{"kind":"request","source":"otlp","requestId":"req_011CV","model":"claude-opus-4-8",
		"effort":"high","querySource":"sdk","usage":{"inputTokens":3,"outputTokens":40,"cacheReadTokens":900,"cacheWriteTokens":12,
		"reasoningTokens":0},"totalCost":0.0042,"durationMs":1800}}`,
}

// telemetry is the telemetry fixture with its telemetry object replaced by t.
func telemetry(t testing.TB, tel map[string]any) []byte {
	return with(t, streams.TypeSessionTelemetry, map[string]any{"telemetry": tel})
}

// fixture returns a fresh, mutable copy of the fixture for typ.
func fixture(t testing.TB, typ string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(fixtures[typ]), &m); err != nil {
		t.Fatalf("fixture %s: %v", typ, err)
	}
	return m
}

func encode(t testing.TB, m map[string]any) []byte {
	t.Helper()
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatalf("encode: %v", err)
	}
	return b
}

// with returns the fixture for typ with each key of set replaced (a nil
// value deletes the key); a key "a.b" reaches into the object at a.
func with(t testing.TB, typ string, set map[string]any) []byte {
	t.Helper()
	m := fixture(t, typ)
	for k, v := range set {
		obj := m
		if parent, child, ok := strings.Cut(k, "."); ok {
			inner, _ := obj[parent].(map[string]any)
			if inner == nil {
				inner = map[string]any{}
				obj[parent] = inner
			}
			obj, k = inner, child
		}
		if v == nil {
			delete(obj, k)
		} else {
			obj[k] = v
		}
	}
	return encode(t, m)
}

func eventChunk(t testing.TB, event map[string]any) []byte {
	return with(t, streams.TypeSessionChunk, map[string]any{"stream": "event", "text": nil, "event": event})
}

func TestDecodeAcceptsEveryType(t *testing.T) {
	for _, typ := range streams.Types {
		t.Run(typ, func(t *testing.T) {
			e, err := streams.Decode([]byte(fixtures[typ]))
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			if e.Type != typ || e.V != streams.Version || e.ID == "" || e.At.IsZero() {
				t.Fatalf("decoded %+v", e)
			}
		})
	}
}

func TestDecodeAccepts(t *testing.T) {
	id128 := strings.Repeat("a", streams.MaxIDLen)
	tests := []struct {
		name string
		data []byte
	}{
		{"unknown top-level fields", with(t, streams.TypeSessionStart, map[string]any{"cockpitVersion": "1.2.3", "extra": map[string]any{"nested": []any{1, "x"}}})},
		{"unknown nested fields", with(t, streams.TypeSessionStart, map[string]any{"owner.team": "infra"})},
		{"unknown usage fields", with(t, streams.TypeSessionEnd, map[string]any{"usage.thinkingTokens": 7})},
		{"unknown event fields", eventChunk(t, map[string]any{"action": "command", "command": "make", "exitCode": 0, "durationMs": 9})},
		{"trailing whitespace", []byte(fixtures[streams.TypeSessionControl] + " \n\t")},
		{"128-character ids", with(t, streams.TypeSessionChunk, map[string]any{"id": id128, "sessionId": id128})},
		{"attach with appSessionRef", with(t, streams.TypeSessionStart, map[string]any{"kind": "attach", "appSessionRef": "7f9c-session"})},
		{"empty level", with(t, streams.TypeSessionStart, map[string]any{"level": ""})},
		{"codex open", with(t, streams.TypeSessionStart, map[string]any{"app": "codex", "kind": "open", "level": nil})},
		{"stderr chunk", with(t, streams.TypeSessionChunk, map[string]any{"stream": "stderr", "seq": 2})},
		{"at the Unix epoch", with(t, streams.TypeSessionChunk, map[string]any{"at": "1970-01-01T00:00:00Z"})},
		{"at in 9999", with(t, streams.TypeSessionChunk, map[string]any{"at": "9999-12-31T23:59:59.999999999Z"})},
		{"chunk seq at MaxSeq", with(t, streams.TypeSessionChunk, map[string]any{"seq": streams.MaxSeq})},
		{"file_write of size 0", eventChunk(t, map[string]any{"action": "file_write", "path": "e", "contentDigest": "blake3:abababababababababababababababababababababababababababababababab", "size": 0})},
		{"usage.raw with a surrogate pair", with(t, streams.TypeSessionEnd, map[string]any{"usage.raw": json.RawMessage(`{"s":"\ud83d\ude00"}`)})},
		{"a 3,000-byte path and a 1 MiB output", eventChunk(t, map[string]any{"action": "command", "command": "cat " + strings.Repeat("p", 3000), "output": strings.Repeat("o", 1<<20)})},
		{"chunk text at the limit", with(t, streams.TypeSessionChunk, map[string]any{"text": strings.Repeat("x", streams.MaxChunkText)})},
		{"file_write by digest", eventChunk(t, map[string]any{"action": "file_write", "path": "main.go", "contentDigest": "blake3:abababababababababababababababababababababababababababababababab", "size": 10})},
		{"file_write of unknown content", eventChunk(t, map[string]any{"action": "file_write", "path": "main.go", "contentUnknown": true})},
		{"file_read with content", eventChunk(t, map[string]any{"action": "file_read", "path": "go.mod", "content": "module x\n"})},
		{"fetch", eventChunk(t, map[string]any{"action": "fetch", "url": "https://go.dev", "status": 200})},
		{"mcp_call event", eventChunk(t, map[string]any{"action": "mcp_call", "server": "github", "tool": "search", "callId": "c-9"})},
		{"failed mcp_call with arguments", eventChunk(t, map[string]any{"action": "mcp_call", "tool": "search", "arguments": map[string]any{"q": "x"}, "isError": true})},
		{"command with no result", eventChunk(t, map[string]any{"action": "command", "command": "ls", "noResult": true})},
		{"file_read with no result", eventChunk(t, map[string]any{"action": "file_read", "path": "a", "contentUnknown": true, "noResult": true})},
		{"mcp_call with arguments and no result", eventChunk(t, map[string]any{"action": "mcp_call", "tool": "t", "arguments": map[string]any{"q": "x"}, "noResult": true})},
		{"end with null usage and cost", with(t, streams.TypeSessionEnd, map[string]any{"usage": nil, "totalCost": nil, "billing": "", "model": "", "effort": ""})},
		{"end with subscription billing, app door", with(t, streams.TypeSessionEnd, map[string]any{"billing": "subscription", "door": "app", "status": "cancelled"})},
		{"mcp.call error", with(t, streams.TypeMCPCall, map[string]any{"status": "error", "error": "rate limited"})},
		{"control renew_credential", with(t, streams.TypeSessionControl, map[string]any{"control": "renew_credential"})},
		{"telemetry request without cost or usage", with(t, streams.TypeSessionTelemetry, map[string]any{"telemetry.usage": nil, "telemetry.totalCost": nil})},
		{"telemetry request keyed by a Codex timestamp", with(t, streams.TypeSessionTelemetry, map[string]any{"app": "codex", "workerId": "host-1",
			"billing": "subscription", "telemetry.requestId": "codex:2025-03-01T10:02:00.123+00:00:17"})},
		{"telemetry tool from OTLP", telemetry(t, map[string]any{"kind": "tool", "source": "otlp", "toolUseId": "toolu_01A", "tool": "Bash",
			"phase": "post", "success": false, "durationMs": 38, "errorType": "ShellError"})},
		{"telemetry tool from a hook, with its event", telemetry(t, map[string]any{"kind": "tool", "source": "hook", "toolUseId": "toolu_01A",
			"tool": "Bash", "phase": "post", "event": map[string]any{"action": "command", "command": "ls", "output": "a\n"}})},
		{"telemetry tool before it runs", telemetry(t, map[string]any{"kind": "tool", "source": "hook", "toolUseId": "call_9", "phase": "pre"})},
		{"telemetry prompt", telemetry(t, map[string]any{"kind": "prompt", "source": "hook", "promptId": "0b7e6c1a-91f2-4c53-a1d4-6d2f0a1b2c3d",
			"promptLength": 42, "promptDigest": "blake3:abababababababababababababababababababababababababababababababab"})},
		{"telemetry end", telemetry(t, map[string]any{"kind": "end", "source": "hook", "reason": "other"})},
		{"telemetry without billing", with(t, streams.TypeSessionTelemetry, map[string]any{"billing": nil})},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := streams.Decode(tt.data); err != nil {
				t.Fatalf("Decode: %v\n%s", err, truncate(tt.data))
			}
		})
	}
}

func TestDecodeRejects(t *testing.T) {
	start, chunk, end, tel := streams.TypeSessionStart, streams.TypeSessionChunk, streams.TypeSessionEnd, streams.TypeSessionTelemetry
	valid := fixtures[streams.TypeSessionControl]
	tests := []struct {
		name   string
		data   []byte
		reason string
	}{
		{"malformed JSON", []byte(`{"v":1,"type":`), streams.ReasonMalformed},
		{"not an object", []byte(`[1,2]`), streams.ReasonWrongType},
		{"empty input", nil, streams.ReasonMalformed},
		{"trailing object", []byte(valid + `{}`), streams.ReasonMalformed},
		{"trailing garbage", []byte(valid + ` x`), streams.ReasonMalformed},
		{"trailing closing brace", []byte(valid + `}`), streams.ReasonMalformed},
		{"trailing closing bracket", []byte(valid + `]`), streams.ReasonMalformed},
		{"invalid UTF-8", with(t, chunk, map[string]any{"text": "ok"}), streams.ReasonInvalidUTF8}, // patched below
		{"too large", with(t, chunk, map[string]any{"text": strings.Repeat("x", streams.MaxEnvelopeBytes)}), streams.ReasonTooLarge},
		{"chunk text too large", with(t, chunk, map[string]any{"text": strings.Repeat("x", streams.MaxChunkText+1)}), streams.ReasonFieldTooLong},
		{"model of 3,000 characters", with(t, end, map[string]any{"model": strings.Repeat("m", 3000)}), streams.ReasonFieldTooLong},
		{"usage.raw over its bound", with(t, end, map[string]any{"usage.raw": map[string]any{"s": strings.Repeat("r", streams.MaxUsageRawLen)}}), streams.ReasonFieldTooLong},
		{"usage.raw with a lone surrogate", with(t, end, map[string]any{"usage.raw": json.RawMessage(`{"s":"\ud800"}`)}), streams.ReasonInvalidField},
		{"usage.raw with a scale numeric refuses", with(t, end, map[string]any{"usage.raw": json.RawMessage(`{"n":1e-16384}`)}), streams.ReasonInvalidField},
		{"file_write of size -5", eventChunk(t, map[string]any{"action": "file_write", "path": "a", "contentDigest": "blake3:abababababababababababababababababababababababababababababababab", "size": -5}), streams.ReasonInvalidField},
		{"file_write of size past 1 TiB", eventChunk(t, map[string]any{"action": "file_write", "path": "a", "contentDigest": "blake3:abababababababababababababababababababababababababababababababab", "size": int64(streams.MaxFileSize) + 1}), streams.ReasonInvalidField},
		{"artifact of size -1", with(t, end, map[string]any{"artifacts": []any{map[string]any{"name": "a", "contentDigest": "blake3:abababababababababababababababababababababababababababababababab", "size": -1}}}), streams.ReasonInvalidField},
		{"at in year 0 (1 BC)", with(t, chunk, map[string]any{"at": "0000-01-01T00:00:00Z"}), streams.ReasonInvalidField},
		{"at before the Unix epoch", with(t, chunk, map[string]any{"at": "1969-12-31T23:59:59Z"}), streams.ReasonInvalidField},
		{"chunk seq 2^63-1", with(t, chunk, map[string]any{"seq": int64(1<<63 - 1)}), streams.ReasonInvalidField},
		{"chunk seq past MaxSeq", with(t, chunk, map[string]any{"seq": int64(streams.MaxSeq) + 1}), streams.ReasonInvalidField},
		{"seq is a string", with(t, chunk, map[string]any{"seq": "one"}), streams.ReasonWrongType},
		{"seq past int64", with(t, chunk, map[string]any{"seq": json.Number("25000000000000000000")}), streams.ReasonWrongType},
		{"exitCode past int32", with(t, end, map[string]any{"exitCode": 4294967296}), streams.ReasonInvalidField},
		{"v is a string", with(t, chunk, map[string]any{"v": "1"}), streams.ReasonWrongType},
		{"at is not a time", with(t, chunk, map[string]any{"at": "yesterday"}), streams.ReasonWrongType},
		{"at is a number", with(t, chunk, map[string]any{"at": 1700000000}), streams.ReasonWrongType},
		{"at offset out of range", with(t, chunk, map[string]any{"at": "2025-03-01T10:00:00+24:00"}), streams.ReasonInvalidField},
		{"owner is a string", with(t, start, map[string]any{"owner": "acme"}), streams.ReasonWrongType},
		{"unknown version", with(t, chunk, map[string]any{"v": 2}), streams.ReasonUnknownVersion},
		{"missing version", with(t, chunk, map[string]any{"v": nil}), streams.ReasonUnknownVersion},
		{"unknown type", with(t, chunk, map[string]any{"type": "session.pause"}), streams.ReasonUnknownType},
		{"missing type", with(t, chunk, map[string]any{"type": nil}), streams.ReasonUnknownType},
		{"missing id", with(t, chunk, map[string]any{"id": nil}), streams.ReasonMissingField},
		{"missing at", with(t, chunk, map[string]any{"at": nil}), streams.ReasonMissingField},
		{"missing sessionId", with(t, chunk, map[string]any{"sessionId": nil}), streams.ReasonMissingField},
		{"mcp.call missing sessionId", with(t, streams.TypeMCPCall, map[string]any{"sessionId": nil}), streams.ReasonMissingField},
		{"disconnect missing workerId", with(t, streams.TypeWorkerDisconnect, map[string]any{"workerId": nil}), streams.ReasonMissingField},
		{"id with a dot", with(t, chunk, map[string]any{"id": "a.b"}), streams.ReasonInvalidID},
		{"sessionId with a dot", with(t, chunk, map[string]any{"sessionId": "s.1"}), streams.ReasonInvalidID},
		{"sessionId with a space", with(t, chunk, map[string]any{"sessionId": "s 1"}), streams.ReasonInvalidID},
		{"sessionId wildcard", with(t, chunk, map[string]any{"sessionId": ">"}), streams.ReasonInvalidID},
		{"id of 129 characters", with(t, chunk, map[string]any{"id": strings.Repeat("a", streams.MaxIDLen+1)}), streams.ReasonInvalidID},
		{"workerId with a dot", with(t, streams.TypeWorkerDisconnect, map[string]any{"workerId": "w.1"}), streams.ReasonInvalidID},
		{"callId with a space", with(t, streams.TypeMCPCall, map[string]any{"callId": "c 1"}), streams.ReasonInvalidID},
		{"event callId with a secret", eventChunk(t, map[string]any{"action": "mcp_call", "server": "github", "tool": "search", "callId": "password=hunter2hunter2"}), streams.ReasonInvalidID},
		{"event contentDigest of free text", eventChunk(t, map[string]any{"action": "file_write", "path": "a", "contentDigest": "token=ghp_secret", "size": 1}), streams.ReasonInvalidField},
		{"event contentDigest in upper case", eventChunk(t, map[string]any{"action": "file_write", "path": "a", "contentDigest": "blake3:" + strings.Repeat("AB", 32), "size": 1}), streams.ReasonInvalidField},
		{"artifact contentDigest of free text", with(t, end, map[string]any{"artifacts": []any{map[string]any{"name": "a", "contentDigest": "sk-ant-api03-xxxxxxxxxxxxxxxxxxxxxxxx", "size": 1}}}), streams.ReasonInvalidField},
		{"planId with a dot", with(t, start, map[string]any{"planId": "p.1"}), streams.ReasonInvalidID},
		{"unknown app", with(t, start, map[string]any{"app": "cursor"}), streams.ReasonUnknownApp},
		{"missing app", with(t, start, map[string]any{"app": nil}), streams.ReasonUnknownApp},
		{"unknown kind", with(t, start, map[string]any{"kind": "fork"}), streams.ReasonInvalidField},
		{"level embeddings", with(t, start, map[string]any{"level": "embeddings"}), streams.ReasonEmbeddingsLevel},
		{"unknown level", with(t, start, map[string]any{"level": "turbo"}), streams.ReasonInvalidField},
		{"attach without appSessionRef", with(t, start, map[string]any{"kind": "attach"}), streams.ReasonMissingField},
		{"missing owner", with(t, start, map[string]any{"owner": nil}), streams.ReasonMissingField},
		{"owner member with a space", with(t, start, map[string]any{"owner.member": "ada lovelace"}), streams.ReasonInvalidID},
		{"parentRunId without stepId", with(t, start, map[string]any{"stepId": nil}), streams.ReasonMissingField},
		{"unknown action", eventChunk(t, map[string]any{"action": "delete", "path": "x"}), streams.ReasonUnknownAction},
		{"command without command", eventChunk(t, map[string]any{"action": "command"}), streams.ReasonMissingField},
		{"file_write without path", eventChunk(t, map[string]any{"action": "file_write", "content": "x"}), streams.ReasonMissingField},
		{"content and digest", eventChunk(t, map[string]any{"action": "file_write", "path": "a", "content": "x", "contentDigest": "blake3:abababababababababababababababababababababababababababababababab", "size": 1}), streams.ReasonInvalidField},
		{"digest without size", eventChunk(t, map[string]any{"action": "file_read", "path": "a", "contentDigest": "blake3:abababababababababababababababababababababababababababababababab"}), streams.ReasonMissingField},
		{"contentUnknown with content", eventChunk(t, map[string]any{"action": "file_write", "path": "a", "content": "x", "contentUnknown": true}), streams.ReasonInvalidField},
		{"contentUnknown with digest", eventChunk(t, map[string]any{"action": "file_write", "path": "a", "contentDigest": "blake3:abababababababababababababababababababababababababababababababab", "size": 1, "contentUnknown": true}), streams.ReasonInvalidField},
		{"contentUnknown with size", eventChunk(t, map[string]any{"action": "file_read", "path": "a", "size": 0, "contentUnknown": true}), streams.ReasonInvalidField},
		{"fetch without url", eventChunk(t, map[string]any{"action": "fetch"}), streams.ReasonMissingField},
		{"noResult with output", eventChunk(t, map[string]any{"action": "command", "command": "ls", "output": "a", "noResult": true}), streams.ReasonInvalidField},
		{"noResult with exitCode", eventChunk(t, map[string]any{"action": "command", "command": "ls", "exitCode": 0, "noResult": true}), streams.ReasonInvalidField},
		{"noResult and isError", eventChunk(t, map[string]any{"action": "mcp_call", "tool": "t", "isError": true, "noResult": true}), streams.ReasonInvalidField},
		{"noResult file_read with content known", eventChunk(t, map[string]any{"action": "file_read", "path": "a", "noResult": true}), streams.ReasonInvalidField},
		{"mcp_call event without tool", eventChunk(t, map[string]any{"action": "mcp_call", "server": "github"}), streams.ReasonMissingField},
		{"arguments on a command", eventChunk(t, map[string]any{"action": "command", "command": "ls", "arguments": map[string]any{}}), streams.ReasonInvalidField},
		{"isError on a file_write", eventChunk(t, map[string]any{"action": "file_write", "path": "a", "isError": true}), streams.ReasonInvalidField},
		{"arguments jsonb refuses", eventChunk(t, map[string]any{"action": "mcp_call", "tool": "t", "arguments": json.RawMessage(`{"s":"\ud800"}`)}), streams.ReasonInvalidField},
		{"chunk seq 0", with(t, chunk, map[string]any{"seq": 0}), streams.ReasonInvalidField},
		{"chunk seq negative", with(t, chunk, map[string]any{"seq": -3}), streams.ReasonInvalidField},
		{"chunk unknown stream", with(t, chunk, map[string]any{"stream": "stdin"}), streams.ReasonInvalidField},
		{"event stream without event", with(t, chunk, map[string]any{"stream": "event"}), streams.ReasonMissingField},
		{"stdout carrying an event", with(t, chunk, map[string]any{"event": map[string]any{"action": "command", "command": "ls"}}), streams.ReasonInvalidField},
		{"unknown control", with(t, streams.TypeSessionControl, map[string]any{"control": "pause"}), streams.ReasonInvalidField},
		{"end bad status", with(t, end, map[string]any{"status": "finished"}), streams.ReasonInvalidField},
		{"end missing status", with(t, end, map[string]any{"status": nil}), streams.ReasonInvalidField},
		{"end bad billing", with(t, end, map[string]any{"billing": "free"}), streams.ReasonInvalidField},
		{"end billing unknown spelled out", with(t, end, map[string]any{"billing": "unknown"}), streams.ReasonInvalidField},
		{"end bad door", with(t, end, map[string]any{"door": "window"}), streams.ReasonInvalidField},
		{"end negative totalCost", with(t, end, map[string]any{"totalCost": -0.01}), streams.ReasonInvalidField},
		{"end negative tokens", with(t, end, map[string]any{"usage.outputTokens": -1}), streams.ReasonInvalidField},
		{"mcp.call without callId", with(t, streams.TypeMCPCall, map[string]any{"callId": nil}), streams.ReasonMissingField},
		{"mcp.call without tool", with(t, streams.TypeMCPCall, map[string]any{"tool": nil}), streams.ReasonMissingField},
		{"mcp.call bad status", with(t, streams.TypeMCPCall, map[string]any{"status": "done"}), streams.ReasonInvalidField},
		{"telemetry without telemetry", with(t, tel, map[string]any{"telemetry": nil}), streams.ReasonMissingField},
		{"telemetry without kind", with(t, tel, map[string]any{"telemetry.kind": nil}), streams.ReasonMissingField},
		{"telemetry unknown kind", with(t, tel, map[string]any{"telemetry.kind": "metric"}), streams.ReasonInvalidField},
		{"telemetry unknown source", with(t, tel, map[string]any{"telemetry.source": "grpc"}), streams.ReasonInvalidField},
		{"telemetry without source", with(t, tel, map[string]any{"telemetry.source": nil}), streams.ReasonInvalidField},
		{"telemetry request without requestId", with(t, tel, map[string]any{"telemetry.requestId": nil}), streams.ReasonMissingField},
		{"telemetry requestId with a space", with(t, tel, map[string]any{"telemetry.requestId": "req 1"}), streams.ReasonInvalidID},
		{"telemetry requestId of 257 characters", with(t, tel, map[string]any{"telemetry.requestId": strings.Repeat("r", streams.MaxNameLen+1)}), streams.ReasonFieldTooLong},
		{"telemetry negative cost", with(t, tel, map[string]any{"telemetry.totalCost": -1}), streams.ReasonInvalidField},
		{"telemetry negative tokens", with(t, tel, map[string]any{"telemetry.usage": map[string]any{"inputTokens": -1}}), streams.ReasonInvalidField},
		{"telemetry negative durationMs", with(t, tel, map[string]any{"telemetry.durationMs": -1}), streams.ReasonInvalidField},
		{"telemetry model of 3,000 characters", with(t, tel, map[string]any{"telemetry.model": strings.Repeat("m", 3000)}), streams.ReasonFieldTooLong},
		{"telemetry querySource over its bound", with(t, tel, map[string]any{"telemetry.querySource": strings.Repeat("q", streams.MaxNameLen+1)}), streams.ReasonFieldTooLong},
		{"telemetry tool without toolUseId", telemetry(t, map[string]any{"kind": "tool", "source": "otlp", "phase": "post"}), streams.ReasonMissingField},
		{"telemetry toolUseId with a dot", telemetry(t, map[string]any{"kind": "tool", "source": "otlp", "phase": "post", "toolUseId": "t.1"}), streams.ReasonInvalidID},
		{"telemetry tool without phase", telemetry(t, map[string]any{"kind": "tool", "source": "otlp", "toolUseId": "t1"}), streams.ReasonInvalidField},
		{"telemetry tool errorType over its bound", telemetry(t, map[string]any{"kind": "tool", "source": "otlp", "toolUseId": "t1", "phase": "post",
			"errorType": strings.Repeat("e", streams.MaxNameLen+1)}), streams.ReasonFieldTooLong},
		{"telemetry tool with a bad event", telemetry(t, map[string]any{"kind": "tool", "source": "hook", "toolUseId": "t1", "phase": "post",
			"event": map[string]any{"action": "delete"}}), streams.ReasonUnknownAction},
		{"telemetry event on a request", with(t, tel, map[string]any{"telemetry.event": map[string]any{"action": "command", "command": "ls"}}), streams.ReasonInvalidField},
		{"telemetry prompt digest of free text", telemetry(t, map[string]any{"kind": "prompt", "source": "hook", "promptDigest": "the prompt"}), streams.ReasonInvalidField},
		{"telemetry negative promptLength", telemetry(t, map[string]any{"kind": "prompt", "source": "otlp", "promptLength": -2}), streams.ReasonInvalidField},
		{"telemetry end reason over its bound", telemetry(t, map[string]any{"kind": "end", "source": "hook", "reason": strings.Repeat("r", streams.MaxReasonLen+1)}), streams.ReasonFieldTooLong},
		{"telemetry unknown app", with(t, tel, map[string]any{"app": "cursor"}), streams.ReasonUnknownApp},
		{"telemetry without owner", with(t, tel, map[string]any{"owner": nil}), streams.ReasonMissingField},
		{"telemetry workerId with a dot", with(t, tel, map[string]any{"workerId": "w.1"}), streams.ReasonInvalidID},
		{"telemetry bad billing", with(t, tel, map[string]any{"billing": "unknown"}), streams.ReasonInvalidField},
		{"telemetry without sessionId", with(t, tel, map[string]any{"sessionId": nil}), streams.ReasonMissingField},
	}
	for i := range tests {
		if tests[i].reason == streams.ReasonInvalidUTF8 {
			tests[i].data = bytes.Replace(tests[i].data, []byte(`"ok"`), []byte("\"o\xffk\""), 1)
		}
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, err := streams.Decode(tt.data)
			if err == nil {
				t.Fatalf("Decode accepted %s\nas %+v", truncate(tt.data), e)
			}
			rej, ok := streams.AsRejection(err)
			if !ok {
				t.Fatalf("Decode error %T %v is not a *Rejection", err, err)
			}
			if !errors.Is(err, streams.ErrRejected) {
				t.Fatalf("errors.Is(%v, ErrRejected) = false", err)
			}
			if rej.Reason != tt.reason {
				t.Fatalf("reason %q (%s), want %q", rej.Reason, rej.Detail, tt.reason)
			}
			if rej.Detail == "" {
				t.Fatalf("rejection %q has no detail", rej.Reason)
			}
		})
	}
}

// TestRejectionNeverQuotesContent: a dead letter's detail is logged and
// stored beside the message, so it must not repeat prompts or output.
func TestRejectionNeverQuotesContent(t *testing.T) {
	const secret = "PROMPT-TEXT-DO-NOT-LOG"
	cases := [][]byte{
		with(t, streams.TypeSessionStart, map[string]any{"prompt": secret, "app": "cursor"}),
		with(t, streams.TypeSessionStart, map[string]any{"prompt": secret, "level": "embeddings"}),
		with(t, streams.TypeSessionChunk, map[string]any{"text": secret, "seq": 0}),
		with(t, streams.TypeSessionChunk, map[string]any{"text": secret + strings.Repeat("x", streams.MaxChunkText)}),
		eventChunk(t, map[string]any{"action": "file_write", "path": "a", "content": secret, "contentDigest": "blake3:abababababababababababababababababababababababababababababababab"}),
	}
	for _, data := range cases {
		_, err := streams.Decode(data)
		if err == nil {
			t.Fatalf("Decode accepted %s", truncate(data))
		}
		if strings.Contains(err.Error(), secret) {
			t.Fatalf("rejection repeats content: %v", err)
		}
	}
}

func TestValidateZeroEnvelope(t *testing.T) {
	err := (&streams.Envelope{}).Validate()
	if rej, ok := streams.AsRejection(err); !ok || rej.Reason != streams.ReasonUnknownVersion {
		t.Fatalf("Validate(zero) = %v, want %s", err, streams.ReasonUnknownVersion)
	}
}

// TestEnvelopeHasNoCredentialField walks every JSON name the envelope can
// carry: none may be a place to put a credential (docs/design.md#redaction). The usage
// token counts are counts, not tokens, and are the only names allowed to
// say "token".
func TestEnvelopeHasNoCredentialField(t *testing.T) {
	forbidden := []string{"credential", "token", "password", "passwd", "secret", "authorization", "apikey", "api_key", "bearer", "cookie"}
	counts := map[string]bool{"inputTokens": true, "outputTokens": true, "cacheReadTokens": true,
		"cacheWriteTokens": true, "reasoningTokens": true}
	names := jsonNames(reflect.TypeFor[streams.Envelope](), "", map[reflect.Type]bool{})
	if len(names) < 40 {
		t.Fatalf("found only %d field names; the walk is broken: %v", len(names), names)
	}
	for _, path := range names {
		name := path[strings.LastIndex(path, ".")+1:]
		if counts[name] && (strings.HasPrefix(path, "usage.") || strings.HasPrefix(path, "telemetry.usage.")) {
			continue
		}
		for _, f := range forbidden {
			if strings.Contains(strings.ToLower(name), f) {
				t.Errorf("envelope field %s looks like it could carry a credential (%q)", path, f)
			}
		}
	}
}

// jsonNames lists the JSON paths of t's fields, recursing into structs,
// pointers and slices.
func jsonNames(t reflect.Type, prefix string, seen map[reflect.Type]bool) []string {
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Array {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct || seen[t] || t.PkgPath() != reflect.TypeFor[streams.Envelope]().PkgPath() {
		return nil
	}
	seen[t] = true
	defer delete(seen, t)
	var out []string
	for f := range t.Fields() {
		if !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" {
			continue
		}
		if name == "" {
			name = f.Name
		}
		out = append(out, prefix+name)
		out = append(out, jsonNames(f.Type, prefix+name+".", seen)...)
	}
	return out
}

func truncate(b []byte) string {
	if len(b) > 300 {
		return string(b[:300]) + "…"
	}
	return string(b)
}
