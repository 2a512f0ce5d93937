package telemetry

import (
	"strings"
	"time"

	"github.com/spinehq/spine/apps"
	"github.com/spinehq/spine/streams"
)

// Translate is the session.telemetry one OTLP log event becomes
// (docs/telemetry.md, the contract's table), or nil for an event spine
// records nothing of (Claude Code's tool_decision and hook bookkeeping,
// Codex's server-sent deltas, …). An event it would record but cannot
// place is ErrUnknownApp (its resource's service.name is no app's) or
// ErrNoSession (it names no session).
//
// The envelope is the door's to finish: Owner is unset (the door's
// verified caller, or the member an admin mapped the event's identity
// to) and Billing holds only the app's own signal (Codex's auth_mode),
// which a token's billing claim overrides. Its free text is not redacted
// here: streams.Publisher redacts every envelope it publishes. received
// stands in for an event that carries no time.
func Translate(e Event, received time.Time) (*streams.Envelope, error) {
	t, key := e.telemetry()
	if t == nil {
		return nil, nil
	}
	app, ok := appOf(e.Resource)
	if !ok {
		return nil, ErrUnknownApp
	}
	if e.SessionID == "" {
		return nil, ErrNoSession
	}
	env := envelope(app, e.SessionID, key, eventAt(e.Time, received), t)
	if host, _ := e.Resource.Str("host.name"); host != "" {
		env.WorkerID = streams.MachineID(host)
	}
	env.Billing = billingOf(e.Attrs)
	return env, nil
}

// telemetry is what e says, and the key that tells it from the session's
// other events of its kind; nil when e is none of the events recorded.
func (e Event) telemetry() (*streams.Telemetry, string) {
	switch e.Name {
	case "claude_code.api_request":
		return claudeRequest(e)
	case "codex.sse_event":
		if kind, _ := e.Attrs.Str("event.kind"); kind == "response.completed" {
			return codexRequest(e)
		}
	case "claude_code.tool_result":
		return otlpTool(e, "tool_use_id")
	case "codex.tool_result":
		return otlpTool(e, "call_id")
	case "claude_code.user_prompt", "codex.user_prompt":
		return otlpPrompt(e)
	}
	return nil, ""
}

// appOf is the app a resource's service.name names: claude-code, or
// Codex's codex_exec, codex_cli_rs, … (codex_*).
func appOf(res Attrs) (string, bool) {
	name, _ := res.Str("service.name")
	switch {
	case name == "claude-code":
		return "claude-code", true
	case name == "codex" || strings.HasPrefix(name, "codex_") || strings.HasPrefix(name, "codex-"):
		return "codex", true
	}
	return "", false
}

// billingOf is Codex's auth_mode as a billing signal: signed in with
// ChatGPT is a subscription, an API key is metered. Without auth_mode (a
// provider's key, and every Claude Code event) the signal is silent:
// nothing more is inferred.
func billingOf(a Attrs) string {
	mode, _ := a.Str("auth_mode")
	mode = strings.NewReplacer("_", "", "-", "").Replace(strings.ToLower(mode))
	switch {
	case strings.HasPrefix(mode, "chatgpt"):
		return "subscription"
	case mode == "apikey":
		return "metered"
	}
	return ""
}

// eventAt is when an event happened, else when the door received it (an
// event time the envelope cannot carry counts as none).
func eventAt(t, received time.Time) time.Time {
	if t.IsZero() || streams.CheckTime("at", t) != nil {
		return received.UTC()
	}
	return t
}

// envelope is a session.telemetry of app's session appSession, its id a
// hash of what tells it apart: a re-sent export, or a hook Claude Code
// posts again, is the same id (JetStream stores it once).
//
// Its session is the one spine collect and spine run give the app's
// session (apps.SessionID), so a session that arrives by telemetry and by
// another door is one session. Its names are cut to their bounds (fit).
func envelope(app, appSession, key string, at time.Time, t *streams.Telemetry) *streams.Envelope {
	fit(t)
	sid := apps.SessionID(app, appSession)
	return &streams.Envelope{V: streams.Version, Type: streams.TypeSessionTelemetry,
		ID: envelopeID(app, sid, t.Kind, t.Source, key), At: at, SessionID: sid, App: app, AppSessionRef: appSession,
		Telemetry: t}
}
