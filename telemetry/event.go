package telemetry

import (
	"strings"
	"time"

	logsv1 "go.opentelemetry.io/proto/slim/otlp/logs/v1"
)

// Event is one log record of an app's telemetry, flattened: what a
// projection reads, without OTLP's nesting of resources and scopes.
type Event struct {
	// Name is the event's name as the app documents it:
	// "claude_code.api_request", "codex.sse_event". "" when the record
	// names none (Codex's "flushing OTEL metrics" debug line).
	Name string
	// SessionID is the app's session: Claude Code's session.id, Codex's
	// conversation.id (from the record, else its resource). "" when the
	// record carries neither.
	SessionID string
	// Time is when the event happened: its event.timestamp attribute,
	// else timeUnixNano, else observedTimeUnixNano (Codex sends
	// timeUnixNano 0). Zero when the record has none. UTC.
	Time time.Time
	// Attrs are the record's attributes. Resource the attributes of the
	// resource it came with (service.name, host.name, …), shared by every
	// event of that resource: read them, never write.
	Attrs, Resource Attrs
	// Scope is the instrumentation scope's name
	// ("com.anthropic.claude_code.events", "codex_otel.log_only").
	Scope string
	// Observed is the record's observedTimeUnixNano, 0 when unset. A
	// re-sent export repeats it, so it tells a record from its neighbours
	// where the app numbers none (Codex sends no event.sequence).
	Observed uint64
}

// Events flattens every log record of d, in order.
func Events(d *logsv1.LogsData) []Event {
	var out []Event
	for _, rl := range d.GetResourceLogs() {
		res := attrs(rl.GetResource().GetAttributes())
		for _, sl := range rl.GetScopeLogs() {
			for _, lr := range sl.GetLogRecords() {
				out = append(out, event(lr, res, sl.GetScope().GetName()))
			}
		}
	}
	return out
}

// event flattens one record.
func event(lr *logsv1.LogRecord, res Attrs, scope string) Event {
	a := attrs(lr.GetAttributes())
	return Event{Name: eventName(lr, a), SessionID: sessionID(a, res), Time: eventTime(lr, a),
		Attrs: a, Resource: res, Scope: scope, Observed: lr.GetObservedTimeUnixNano()}
}

// eventName is the record's event.name attribute, qualified by its body
// when the body ends in it (Claude Code's attribute says "api_request",
// its body "claude_code.api_request"); without the attribute, the
// record's EventName field, else a string body, when either is a name.
// Codex fills EventName with its tracing event's source line ("event
// otel/src/events/session_telemetry.rs:737"): the attribute comes first,
// and a string with a space in it is no name.
func eventName(lr *logsv1.LogRecord, a Attrs) string {
	body := lr.GetBody().GetStringValue()
	if n, _ := a.Str("event.name"); n != "" {
		if strings.HasSuffix(body, "."+n) && isName(body) {
			return body
		}
		return n
	}
	for _, n := range []string{lr.GetEventName(), body} {
		if isName(n) {
			return n
		}
	}
	return ""
}

// isName: a non-empty string without white space.
func isName(s string) bool {
	return s != "" && !strings.ContainsFunc(s, func(r rune) bool { return r <= ' ' })
}

// Session-id attributes, by app.
const (
	claudeSession = "session.id"
	codexSession  = "conversation.id"
)

// sessionID is the session the record names, else its resource.
func sessionID(a, res Attrs) string {
	for _, from := range []Attrs{a, res} {
		for _, k := range []string{claudeSession, codexSession} {
			if s, _ := from.Str(k); s != "" {
				return s
			}
		}
	}
	return ""
}

// eventTime is event.timestamp (RFC 3339, both apps), else the record's
// time, else when the SDK observed it.
func eventTime(lr *logsv1.LogRecord, a Attrs) time.Time {
	if s, ok := a.Str("event.timestamp"); ok {
		if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
			return t.UTC()
		}
	}
	for _, ns := range []uint64{lr.GetTimeUnixNano(), lr.GetObservedTimeUnixNano()} {
		if ns != 0 && ns <= maxUnixNano {
			return time.Unix(0, int64(ns)).UTC()
		}
	}
	return time.Time{}
}

// maxUnixNano is the last instant an int64 of nanoseconds holds (2262).
const maxUnixNano = 1<<63 - 1
