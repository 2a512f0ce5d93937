package node_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/spinehq/spine/auth"
	"github.com/spinehq/spine/library"
	"github.com/spinehq/spine/recorder"
	"github.com/spinehq/spine/spine"
	"github.com/spinehq/spine/streams"
)

// The Claude Code run the captures were made of, posted to a node through
// both doors in the order the app sent it (each tool's hook before the
// export that holds its tool_result; the last export after SessionEnd),
// is one spine session: alice's, done, its four tools four steps (each its
// hook's, which came first), its prompt's digest, and at its end one
// router-call row whose tokens and cost are the six requests' as reported,
// the ones exported after the end included. Only each event's first hook
// was captured: the PostToolUse of the Bash sleep and of the Agent are the
// captured one with their tool's fields.
func TestCapturedClaudeCodeRunIsOneSession(t *testing.T) {
	f := newFixture(t)
	alice := f.token("acme", "alice")
	logs, metrics := otlpCaptures(t, "claude-code-json-logs"), otlpCaptures(t, "claude-code-json-metrics")
	hook := func(ev string) {
		if status, body := f.do("POST", "/v1/hooks/claude-code", alice, hookBody(t, ev)); status != http.StatusOK {
			t.Fatalf("%s: %d %s", ev, status, body)
		}
	}
	for _, ev := range []string{"UserPromptSubmit", "PreToolUse", "PostToolUse"} {
		hook(ev)
	}
	f.export(logs[0], alice)
	f.export(metrics[0], alice)
	post := func(body []byte) {
		if status, answer := f.do("POST", "/v1/hooks/claude-code", alice, body); status != http.StatusOK {
			t.Fatalf("hook: %d %s", status, answer)
		}
	}
	post(postToolUse(t, "Bash", "toolu_000000000000000000000006", `{"command":"sleep 1.2; cat note.txt"}`, `{"stdout":"rig","stderr":""}`))
	hook("PostToolUseFailure")
	post(postToolUse(t, "Agent", "toolu_000000000000000000000012", `{"prompt":"say sub done"}`, `{"status":"completed"}`))
	for _, ev := range []string{"Stop", "SubagentStop", "SessionEnd"} {
		hook(ev)
	}
	f.export(logs[1], alice)
	f.export(metrics[1], alice)
	f.waitCaughtUp()

	var s recorder.Session
	status, body := f.do("GET", "/v1/sessions/"+hookSession, alice, nil)
	if err := json.Unmarshal(body, &s); status != http.StatusOK || err != nil {
		t.Fatalf("session: %d %s", status, body)
	}
	if s.Status != "done" || s.App != "claude-code" || s.Member != "alice" || s.Origin != recorder.OriginTelemetry ||
		s.RecordedSteps != 4 || s.Model != "claude-opus-4-8" || s.PromptDigest != library.Digest([]byte("write, then cat a note")) {
		t.Fatalf("session %s", body)
	}
	var steps spine.StepsPage
	if status, body := f.do("GET", "/v1/runs/"+s.SessionRunID+"/steps", alice, nil); status != http.StatusOK || json.Unmarshal(body, &steps) != nil {
		t.Fatalf("steps: %d %s", status, body)
	}
	var actions []string
	for _, st := range steps.Steps {
		actions = append(actions, st.Action+":"+st.CallID)
	}
	want := "file_write:toolu_000000000000000000000003 command:toolu_000000000000000000000006 command:toolu_000000000000000000000009 tool:toolu_000000000000000000000012"
	if strings.Join(actions, " ") != want {
		t.Fatalf("steps %v, want %s", actions, want)
	}
	if !strings.Contains(string(steps.Steps[2].Detail), `"exit 3"`) {
		t.Fatalf("the failed command's step: %s", steps.Steps[2].Detail)
	}
	var in, out, cacheRead, cacheWrite int64
	var cost, billing, door, model string
	err := f.n.Pool.QueryRow(context.Background(), `SELECT input_tokens, output_tokens, cache_read_tokens, cache_write_tokens,
		total_cost::text, billing, door, served_model FROM router_calls WHERE session_id = $1`, hookSession).
		Scan(&in, &out, &cacheRead, &cacheWrite, &cost, &billing, &door, &model)
	if err != nil {
		t.Fatalf("router call: %v", err)
	}
	// 4+5+…+9 input without the cache, 40+80+…+240 output, 12,000×(1+…+6) cache reads, 951+…+956 cache
	// writes (router_calls' input counts the cache too), the reported costs' exact sum (one was sent as
	// 0.041196250000000004)
	if in != 39+252000+5721 || out != 840 || cacheRead != 252000 || cacheWrite != 5721 || cost != "0.184076250000000004" || billing != "unknown" ||
		door != "session" || model != "claude-opus-4-8" {
		t.Fatalf("router call: in %d out %d cache %d/%d cost %s billing %s door %s model %s", in, out, cacheRead, cacheWrite, cost,
			billing, door, model)
	}
}

// postToolUse is the captured PostToolUse hook as tool use's of tool.
func postToolUse(t *testing.T, tool, use, input, response string) []byte {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(hookBody(t, "PostToolUse"), &m); err != nil {
		t.Fatal(err)
	}
	m["tool_name"], m["tool_use_id"] = tool, use
	m["tool_input"], m["tool_response"] = json.RawMessage(input), json.RawMessage(response)
	b, _ := json.Marshal(m)
	return b
}

// A token's billing claim is stamped on what the doors record, over the
// app's own signal; without one, Codex's auth_mode is the signal.
func TestTokenBillingClaimIsStamped(t *testing.T) {
	f := newFixture(t)
	claimed, err := f.n.Signer.Mint(auth.Claims{Org: "acme", Member: "alice", Billing: auth.BillingMetered}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	for prefix, c := range map[string]struct{ token, want string }{
		"codex-json-chatgpt-logs": {claimed, "metered"},         // the claim over auth_mode Chatgpt
		"codex-json-logs":         {f.token("acme", "bob"), ""}, // a provider's key: no signal, no claim
		"codex-protobuf-logs":     {claimed, "metered"},         // the claim where the app says nothing
	} {
		caps := otlpCaptures(t, prefix)
		for _, cp := range caps {
			f.export(cp, c.token)
		}
		_, session := recordable(t, caps)
		var e streams.Envelope
		if err := json.Unmarshal(f.lastOnLog(session).Data, &e); err != nil || e.Billing != c.want {
			t.Fatalf("%s: billing %q on the log, want %q (%v)", prefix, e.Billing, c.want, err)
		}
	}
	caps := otlpCaptures(t, "codex-json-chatgpt-logs")
	_, session := recordable(t, caps)
	f2 := newFixture(t)
	for _, cp := range caps {
		f2.export(cp, f2.token("acme", "alice"))
	}
	var e streams.Envelope
	if err := json.Unmarshal(f2.lastOnLog(session).Data, &e); err != nil || e.Billing != "subscription" {
		t.Fatalf("ChatGPT without a claim: billing %q, want subscription (%v)", e.Billing, err)
	}
}
