package telemetry_test

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spinehq/spine/library"
	"github.com/spinehq/spine/secrets"
	"github.com/spinehq/spine/streams"
	"github.com/spinehq/spine/telemetry"
)

// hookBody is testdata/hooks' capture of event.
func hookBody(t testing.TB, event string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(hooksDir, "claude-code-"+event+".json"))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// hookEnvelope is what a hook body becomes, owned and checked valid.
func hookEnvelope(t *testing.T, body []byte) *streams.Envelope {
	t.Helper()
	h, err := telemetry.DecodeHook(body)
	if err != nil {
		t.Fatal(err)
	}
	env, err := h.Envelope(received)
	if err != nil || env == nil {
		return env
	}
	env.Owner = &streams.Owner{Org: "acme", Member: "ada"}
	if err := env.Validate(); err != nil {
		t.Fatalf("%s: the envelope does not validate: %v", h.Event, err)
	}
	return env
}

const hookSession = "5ccbb9e7-7ba5-4d38-991d-8b2ec2277772"

// Each hook Claude Code posted becomes what the contract says, in the
// session its OTLP events are of.
func TestHookCaptures(t *testing.T) {
	prompt := hookEnvelope(t, hookBody(t, "UserPromptSubmit"))
	p := prompt.Telemetry
	if p.Kind != streams.TelemetryPrompt || p.Source != streams.TelemetryHook || p.PromptID != "fa7aab6d-4d59-45d6-bedc-59a1ddd3ad64" ||
		*p.PromptLength != 22 || p.PromptDigest != library.Digest([]byte("write, then cat a note")) {
		t.Fatalf("UserPromptSubmit: %+v", p)
	}
	if b, _ := prompt.Marshal(); strings.Contains(string(b), "cat a note") {
		t.Fatalf("the prompt's text is in its envelope: %s", b)
	}
	pre := hookEnvelope(t, hookBody(t, "PreToolUse")).Telemetry
	if pre.Kind != streams.TelemetryTool || pre.Phase != streams.PhasePre || pre.ToolUseID != "toolu_000000000000000000000003" ||
		pre.Tool != "Write" || pre.Event != nil || pre.Success != nil {
		t.Fatalf("PreToolUse: %+v", pre)
	}
	post := hookEnvelope(t, hookBody(t, "PostToolUse")).Telemetry
	if post.Phase != streams.PhasePost || !*post.Success || *post.DurationMs != 3 || post.Event == nil ||
		post.Event.Action != "file_write" || !strings.HasSuffix(post.Event.Path, "/work/note.txt") || !post.Event.ContentUnknown {
		t.Fatalf("PostToolUse: %+v (event %+v)", post, post.Event)
	}
	failed := hookEnvelope(t, hookBody(t, "PostToolUseFailure")).Telemetry
	if ev := failed.Event; *failed.Success || ev == nil || ev.Action != "command" || ev.Command != "exit 3" ||
		ev.ExitCode == nil || *ev.ExitCode != 3 || ev.Output != "Exit code 3" {
		t.Fatalf("PostToolUseFailure: %+v (event %+v)", failed, failed.Event)
	}
	end := hookEnvelope(t, hookBody(t, "SessionEnd"))
	if end.Telemetry.Kind != streams.TelemetryEnd || end.Telemetry.Reason != "other" || end.SessionID != hookSession ||
		end.App != "claude-code" || !end.At.Equal(received) {
		t.Fatalf("SessionEnd: %+v %+v", end, end.Telemetry)
	}
	for _, ev := range []string{"Stop", "SubagentStop"} {
		if env := hookEnvelope(t, hookBody(t, ev)); env != nil {
			t.Fatalf("%s became %+v, want nothing", ev, env.Telemetry)
		}
	}
}

// withTool is the PostToolUse capture as another tool's.
func withTool(t *testing.T, name, input, response string) []byte {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(hookBody(t, "PostToolUse"), &m); err != nil {
		t.Fatal(err)
	}
	m["tool_name"], m["tool_input"], m["tool_response"] = name, json.RawMessage(input), json.RawMessage(response)
	b, _ := json.Marshal(m)
	return b
}

// A Bash hook's step is its command and what it printed; a fetch its URL;
// an MCP tool its server, tool and arguments; a tool that is no action
// (Task, Glob) a tool use without one.
func TestHookActions(t *testing.T) {
	bash := hookEnvelope(t, withTool(t, "Bash", `{"command":"sleep 1.2; cat note.txt"}`,
		`{"stdout":"rig","stderr":"warn","interrupted":false}`)).Telemetry.Event
	if bash.Action != "command" || bash.Command != "sleep 1.2; cat note.txt" || bash.Output != "rig\nwarn" || bash.ExitCode != nil {
		t.Fatalf("Bash: %+v", bash)
	}
	fetch := hookEnvelope(t, withTool(t, "WebFetch", `{"url":"https://example.com/a","prompt":"x"}`, `{"code":200}`)).Telemetry.Event
	if fetch.Action != "fetch" || fetch.URL != "https://example.com/a" {
		t.Fatalf("WebFetch: %+v", fetch)
	}
	mcp := hookEnvelope(t, withTool(t, "mcp__spine__search_capabilities", `{"query":"x"}`, `[]`)).Telemetry.Event
	if mcp.Action != "mcp_call" || mcp.Server != "spine" || mcp.Tool != "search_capabilities" || string(mcp.Arguments) != `{"query":"x"}` ||
		mcp.CallID != "toolu_000000000000000000000003" {
		t.Fatalf("MCP: %+v", mcp)
	}
	read := hookEnvelope(t, withTool(t, "Read", `{"file_path":"/w/a.go"}`, `{"type":"text","file":{"content":"package a"}}`)).Telemetry.Event
	if read.Action != "file_read" || read.Path != "/w/a.go" || !read.ContentUnknown || read.Content != "" {
		t.Fatalf("Read: %+v", read)
	}
	if glob := hookEnvelope(t, withTool(t, "Glob", `{"pattern":"*"}`, `{}`)).Telemetry; glob.Event != nil || glob.Tool != "Glob" {
		t.Fatalf("Glob: %+v", glob)
	}
}

// A secret in a hook's command is not redacted by the translation (the
// publisher does it, once) but is by the envelope's Redacted, which
// streams.Publisher publishes.
func TestHookSecretIsRedactedOnPublish(t *testing.T) {
	key := "sk-ant-api03-" + strings.Repeat("Zk9x", 20)
	env := hookEnvelope(t, withTool(t, "Bash", `{"command":"curl -H 'x-api-key: `+key+`' https://api.example.com"}`, `{"stdout":"ok"}`))
	red := env.Redacted()
	if b, _ := red.Marshal(); strings.Contains(string(b), key) || !strings.Contains(red.Telemetry.Event.Command, secrets.Redacted) {
		t.Fatalf("redacted: %s", b)
	}
}

// A body that is no hook is ErrMalformed, never quoting it; a hook
// without a session is ErrNoSession.
func TestDecodeHookRefuses(t *testing.T) {
	for _, body := range []string{`{"session_id":`, `[1]`, `{"a":1} {}`, "{\"prompt\":\"\xff\"}"} {
		_, err := telemetry.DecodeHook([]byte(body))
		if !errors.Is(err, telemetry.ErrMalformed) || strings.Contains(err.Error(), "prompt") {
			t.Fatalf("%q: %v, want ErrMalformed quoting nothing", body, err)
		}
	}
	h, _ := telemetry.DecodeHook([]byte(`{"hook_event_name":"SessionEnd"}`))
	if _, err := h.Envelope(received); err != telemetry.ErrNoSession {
		t.Fatalf("no session: %v, want ErrNoSession", err)
	}
}

// FuzzDecodeHook: no body makes DecodeHook or Envelope panic, an error is
// ErrMalformed or ErrNoSession, and an envelope is a session.telemetry
// that encodes, of Claude Code's session, never carrying a prompt's text.
func FuzzDecodeHook(f *testing.F) {
	for _, ev := range []string{"UserPromptSubmit", "PreToolUse", "PostToolUse", "PostToolUseFailure", "Stop", "SubagentStop", "SessionEnd"} {
		f.Add(hookBody(f, ev))
	}
	f.Add([]byte(`{"session_id":"s","hook_event_name":"PostToolUse","tool_name":"mcp__a__b","tool_use_id":"t","tool_input":{"q":1}}`))
	f.Add([]byte(`{"session_id":"s","hook_event_name":"PostToolUse","tool_name":"Bash","tool_use_id":"t","tool_input":{"command":"ls"},"tool_response":{"stdout":"a"}}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		h, err := telemetry.DecodeHook(body)
		if err != nil {
			if !errors.Is(err, telemetry.ErrMalformed) {
				t.Fatalf("error wraps no ErrMalformed: %v", err)
			}
			return
		}
		env, err := h.Envelope(received)
		if err != nil {
			if err != telemetry.ErrNoSession {
				t.Fatalf("envelope: %v", err)
			}
			return
		}
		if env == nil {
			return
		}
		b, err := env.Marshal()
		if err != nil || env.Type != streams.TypeSessionTelemetry || env.App != "claude-code" || env.AppSessionRef != h.SessionID {
			t.Fatalf("envelope %s (%v)", b, err)
		}
		if env.Telemetry.Kind == streams.TelemetryPrompt && len(h.Prompt) >= 16 && strings.Contains(string(b), h.Prompt) &&
			!strings.Contains(h.SessionID+h.PromptID, h.Prompt) {
			t.Fatalf("the prompt's text is in its envelope: %s", b)
		}
	})
}
