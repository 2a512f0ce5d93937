package telemetry_test

import (
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/spinehq/spine/apps"
	"github.com/spinehq/spine/members"
	"github.com/spinehq/spine/streams"
	"github.com/spinehq/spine/telemetry"
)

var received = time.Date(2026, 12, 1, 19, 0, 0, 0, time.UTC)

// translated are the envelopes every event of prefix's logs captures
// becomes, each given an owner as a door would, and checked valid.
func translated(t *testing.T, prefix string) []*streams.Envelope {
	t.Helper()
	var out []*streams.Envelope
	for _, e := range events(t, prefix) {
		env, err := telemetry.Translate(e, received)
		if err != nil {
			t.Fatalf("%s: %s: %v", prefix, e.Name, err)
		}
		if env == nil {
			continue
		}
		env.Owner = &streams.Owner{Org: "acme", Member: "ada"}
		if err := env.Validate(); err != nil {
			t.Fatalf("%s: %s: the envelope does not validate: %v", prefix, e.Name, err)
		}
		out = append(out, env)
	}
	return out
}

// ofKind are the envelopes whose telemetry is of kind.
func ofKind(envs []*streams.Envelope, kind string) []*streams.Envelope {
	var out []*streams.Envelope
	for _, e := range envs {
		if e.Telemetry.Kind == kind {
			out = append(out, e)
		}
	}
	return out
}

// Claude Code's captures, in each protocol: one request per api_request
// with its request_id, counts and cost as sent, one tool post per
// tool_result, one prompt (its text was not sent, so no digest); every
// envelope of the run in one session, with a distinct id.
func TestTranslateClaudeCode(t *testing.T) {
	for _, prefix := range []string{"claude-code-json-logs", "claude-code-protobuf-logs", "claude-code-json-gzip-logs"} {
		evs := events(t, prefix)
		envs := translated(t, prefix)
		apiRequests := named(evs, "claude_code.api_request")
		requests := ofKind(envs, streams.TelemetryRequest)
		if len(requests) != len(apiRequests) || len(requests) == 0 {
			t.Fatalf("%s: %d requests of %d api_request events", prefix, len(requests), len(apiRequests))
		}
		var sent, got float64
		for i, r := range requests {
			a := apiRequests[i].Attrs
			id, _ := a.Str("request_id")
			in, _ := a.Int("input_tokens")
			cacheRead, _ := a.Int("cache_read_tokens")
			cacheWrite, _ := a.Int("cache_creation_tokens")
			cost, _ := a.Float("cost_usd")
			tel := r.Telemetry
			if tel.RequestID != id || tel.Usage.InputTokens != in || tel.Usage.CacheReadTokens != cacheRead ||
				tel.Usage.CacheWriteTokens != cacheWrite || tel.TotalCost == nil || tel.Model == "" || tel.Effort == "" {
				t.Fatalf("%s: request %+v (usage %+v) from %v", prefix, tel, tel.Usage, a)
			}
			if !strings.Contains(string(tel.Usage.Raw), `"cache_creation_tokens"`) {
				t.Fatalf("%s: usage.raw %s is not the app's report", prefix, tel.Usage.Raw)
			}
			sent, got = sent+cost, got+*tel.TotalCost
		}
		if sent != got {
			t.Fatalf("%s: cost %v, the app reported %v", prefix, got, sent)
		}
		tools := ofKind(envs, streams.TelemetryTool)
		if len(tools) != len(named(evs, "claude_code.tool_result")) {
			t.Fatalf("%s: %d tools of %d tool_result events", prefix, len(tools), len(named(evs, "claude_code.tool_result")))
		}
		for _, tool := range tools {
			if tel := tool.Telemetry; tel.Phase != streams.PhasePost || tel.Success == nil || tel.Event != nil || tel.Tool == "" {
				t.Fatalf("%s: tool %+v", prefix, tel)
			}
		}
		prompts := ofKind(envs, streams.TelemetryPrompt)
		if len(prompts) != 1 || prompts[0].Telemetry.PromptID == "" || *prompts[0].Telemetry.PromptLength != 22 ||
			prompts[0].Telemetry.PromptDigest != "" {
			t.Fatalf("%s: prompts %+v", prefix, prompts)
		}
		checkEnvelopesOfOneSession(t, prefix, envs, "claude-code", "")
	}
}

// checkEnvelopesOfOneSession: every envelope is of one session of app, the id
// spine collect gives it, on machine worker, and no two share an id.
func checkEnvelopesOfOneSession(t *testing.T, prefix string, envs []*streams.Envelope, app, worker string) {
	t.Helper()
	ids := map[string]bool{}
	for _, e := range envs {
		if e.App != app || e.SessionID != apps.SessionID(app, e.AppSessionRef) || e.SessionID != envs[0].SessionID ||
			e.WorkerID != worker || !strings.HasPrefix(e.ID, "tel-") || ids[e.ID] {
			t.Fatalf("%s: envelope %s of session %s (%s, %s, worker %q); the first is of %s", prefix, e.ID, e.SessionID,
				e.App, e.AppSessionRef, e.WorkerID, envs[0].SessionID)
		}
		ids[e.ID] = true
	}
}

// Codex's captures: a request for each response.completed with counts,
// input without the cached part, keyed by its time; tools without their
// arguments or output; the machine from host.name; the billing signal
// from auth_mode (ChatGPT: subscription; a provider's key: none).
func TestTranslateCodex(t *testing.T) {
	for prefix, billing := range map[string]string{"codex-json-logs": "", "codex-protobuf-logs": "",
		"codex-json-chatgpt-logs": "subscription"} {
		envs := translated(t, prefix)
		requests := ofKind(envs, streams.TelemetryRequest)
		if len(requests) != 3 {
			t.Fatalf("%s: %d requests, want the fake model's 3", prefix, len(requests))
		}
		u := requests[0].Telemetry.Usage
		if u.InputTokens != 900 || u.CacheReadTokens != 3000 || u.OutputTokens != 40 || u.ReasoningTokens != 12 ||
			!strings.HasPrefix(requests[0].Telemetry.RequestID, "codex:") || requests[0].Telemetry.Effort != "medium" {
			t.Fatalf("%s: first request %+v, usage %+v", prefix, requests[0].Telemetry, u)
		}
		tools := ofKind(envs, streams.TelemetryTool)
		if len(tools) != 2 {
			t.Fatalf("%s: %d tools, want 2", prefix, len(tools))
		}
		for _, e := range envs {
			b, _ := e.Marshal()
			if strings.Contains(string(b), "sleep 1.2") || strings.Contains(string(b), "Process exited") {
				t.Fatalf("%s: an envelope carries a tool's arguments or output: %s", prefix, b)
			}
			if e.Billing != billing {
				t.Fatalf("%s: billing %q, want %q", prefix, e.Billing, billing)
			}
		}
		checkEnvelopesOfOneSession(t, prefix, envs, "codex", "vm")
	}
}

// A re-sent export is the same envelopes, ids included; the same events
// in another session are other ids.
func TestTranslateIsDeterministic(t *testing.T) {
	for _, prefix := range []string{"claude-code-json-logs", "codex-json-logs"} {
		a, b := translated(t, prefix), translated(t, prefix)
		for i := range a {
			ja, _ := a[i].Marshal()
			jb, _ := b[i].Marshal()
			if string(ja) != string(jb) {
				t.Fatalf("%s: translated twice:\n%s\n%s", prefix, ja, jb)
			}
		}
	}
	e := named(events(t, "claude-code-json-logs"), "claude_code.api_request")[0]
	one, _ := telemetry.Translate(e, received)
	e.Attrs = copyAttrs(e.Attrs)
	e.Attrs["session.id"], e.SessionID = "another-session", "another-session"
	other, _ := telemetry.Translate(e, received)
	if one.ID == other.ID {
		t.Fatalf("one request in two sessions: one id %s", one.ID)
	}
}

func copyAttrs(a telemetry.Attrs) telemetry.Attrs {
	out := telemetry.Attrs{}
	for k, v := range a {
		out[k] = v
	}
	return out
}

// An event of an app spine does not record, or of no session, is refused;
// one spine records nothing of is no envelope, whatever its resource.
func TestTranslateRefuses(t *testing.T) {
	e := named(events(t, "claude-code-json-logs"), "claude_code.api_request")[0]
	other := e
	other.Resource = telemetry.Attrs{"service.name": "cursor"}
	if _, err := telemetry.Translate(other, received); err != telemetry.ErrUnknownApp {
		t.Fatalf("another app: %v, want ErrUnknownApp", err)
	}
	none := e
	none.SessionID = ""
	if _, err := telemetry.Translate(none, received); err != telemetry.ErrNoSession {
		t.Fatalf("no session: %v, want ErrNoSession", err)
	}
	decision := named(events(t, "claude-code-json-logs"), "claude_code.tool_decision")[0]
	decision.Resource = other.Resource
	if env, err := telemetry.Translate(decision, received); env != nil || err != nil {
		t.Fatalf("tool_decision: %v %v, want nothing", env, err)
	}
}

// What the apps say of their user: Claude Code with an API key an
// install id only; Codex signed in with ChatGPT its email and account.
func TestIdentities(t *testing.T) {
	cc := named(events(t, "claude-code-json-logs"), "claude_code.api_request")[0].Identities()
	if len(cc) != 1 || cc[0].Kind != members.User || len(cc[0].Value) != 64 {
		t.Fatalf("Claude Code's identities %v", cc)
	}
	cx := named(events(t, "codex-json-chatgpt-logs"), "codex.user_prompt")[0].Identities()
	want := []members.Identity{{Kind: members.Email, Value: "apprig@example.test"}, {Kind: members.Account, Value: "acct-apprig"}}
	if len(cx) != 2 || cx[0] != want[0] || cx[1] != want[1] {
		t.Fatalf("Codex's identities %v, want %v", cx, want)
	}
	if ids := named(events(t, "codex-json-logs"), "codex.user_prompt")[0].Identities(); len(ids) != 0 {
		t.Fatalf("Codex with an API key says %v of its user, want nothing", ids)
	}
	e := named(events(t, "codex-json-chatgpt-logs"), "codex.user_prompt")[0]
	e.Attrs = copyAttrs(e.Attrs)
	e.Attrs["user.email"] = "ada\x1b[2J@example.test" // an escape sequence for the admin's terminal
	if ids := e.Identities(); len(ids) != 1 || ids[0].Kind != members.Account {
		t.Fatalf("an email with a control character: %v, want it dropped, the account kept", ids)
	}
}

// Every data point of the metrics captures is counted, under its app.
func TestPoints(t *testing.T) {
	for prefix, app := range map[string]string{"claude-code-json-metrics": "claude-code", "codex-protobuf-metrics": "codex"} {
		n := 0
		for _, d := range metrics(t, prefix) {
			p := telemetry.Points(d)
			if len(p) != 1 || p[app] == 0 {
				t.Fatalf("%s: points %v, want some of %s only", prefix, p, app)
			}
			n += p[app]
		}
		if n < 5 {
			t.Fatalf("%s: %d points", prefix, n)
		}
	}
}

// A name past its bound is cut at a character, not the event refused: a
// request with a 300-character model name keeps its tokens and cost, and
// its envelope is one the log takes.
func TestLongNamesAreCut(t *testing.T) {
	e := named(events(t, "claude-code-json-logs"), "claude_code.api_request")[0]
	e.Attrs = copyAttrs(e.Attrs)
	long := strings.Repeat("é", 150) // 300 bytes, two a character
	e.Attrs["model"], e.Attrs["query_source"] = long, "x"+long
	env, err := telemetry.Translate(e, received)
	if err != nil {
		t.Fatal(err)
	}
	tel := env.Telemetry
	for _, name := range []string{tel.Model, tel.QuerySource} {
		if len(name) > streams.MaxNameLen || !utf8.ValidString(name) || len(name) < streams.MaxNameLen-1 {
			t.Fatalf("a 300-byte name became %d bytes (valid UTF-8: %v)", len(name), utf8.ValidString(name))
		}
	}
	if !strings.HasPrefix(long, tel.Model) || tel.Usage == nil || tel.Usage.InputTokens == 0 || tel.TotalCost == nil {
		t.Fatalf("the request: %+v", tel)
	}
	env.Owner = &streams.Owner{Org: "acme", Member: "alice"} // the door's
	if err := env.Validate(); err != nil {
		t.Fatalf("the envelope is refused: %v", err)
	}
}
