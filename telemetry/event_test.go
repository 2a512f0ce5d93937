package telemetry_test

import (
	"testing"
	"time"

	"github.com/spinehq/spine/telemetry"
	commonv1 "go.opentelemetry.io/proto/slim/otlp/common/v1"
	logsv1 "go.opentelemetry.io/proto/slim/otlp/logs/v1"
	resourcev1 "go.opentelemetry.io/proto/slim/otlp/resource/v1"
)

func str(k, v string) *commonv1.KeyValue {
	return &commonv1.KeyValue{Key: k, Value: &commonv1.AnyValue{Value: &commonv1.AnyValue_StringValue{StringValue: v}}}
}

func strBody(s string) *commonv1.AnyValue {
	return &commonv1.AnyValue{Value: &commonv1.AnyValue_StringValue{StringValue: s}}
}

// one flattens a single record under a resource.
func one(lr *logsv1.LogRecord, res ...*commonv1.KeyValue) telemetry.Event {
	d := &logsv1.LogsData{ResourceLogs: []*logsv1.ResourceLogs{{
		Resource:  &resourcev1.Resource{Attributes: res},
		ScopeLogs: []*logsv1.ScopeLogs{{LogRecords: []*logsv1.LogRecord{lr}}},
	}}}
	return telemetry.Events(d)[0]
}

func TestEventName(t *testing.T) {
	for want, lr := range map[string]*logsv1.LogRecord{
		// Claude Code: the attribute, qualified by the body
		"claude_code.api_request": {Body: strBody("claude_code.api_request"), Attributes: []*commonv1.KeyValue{str("event.name", "api_request")}},
		// Codex: the attribute; EventName is a source line
		"codex.sse_event": {EventName: "event otel/src/events/session_telemetry.rs:1123", Attributes: []*commonv1.KeyValue{str("event.name", "codex.sse_event")}},
		// a body that does not end in the attribute is not its name
		"x": {Body: strBody("something.else"), Attributes: []*commonv1.KeyValue{str("event.name", "x")}},
		// no attribute: the spec's EventName, else a body that is a name
		"gen_ai.event": {EventName: "gen_ai.event", Body: strBody("text with spaces")},
		"body.is.name": {Body: strBody("body.is.name")},
		"":             {Body: strBody("flushing OTEL metrics"), EventName: "event codex-rs/otel/src/lib.rs:9"},
	} {
		if got := one(lr).Name; got != want {
			t.Errorf("%v: name %q, want %q", lr, got, want)
		}
	}
}

func TestEventSession(t *testing.T) {
	for want, e := range map[string]telemetry.Event{
		"claude": one(&logsv1.LogRecord{Attributes: []*commonv1.KeyValue{str("session.id", "claude")}}),
		"codex":  one(&logsv1.LogRecord{Attributes: []*commonv1.KeyValue{str("conversation.id", "codex")}}),
		"res":    one(&logsv1.LogRecord{}, str("session.id", "res")),
		"rec":    one(&logsv1.LogRecord{Attributes: []*commonv1.KeyValue{str("conversation.id", "rec")}}, str("session.id", "res")),
		"":       one(&logsv1.LogRecord{}),
	} {
		if e.SessionID != want {
			t.Errorf("session %q, want %q", e.SessionID, want)
		}
	}
}

func TestEventTime(t *testing.T) {
	stamp := time.Date(2026, 12, 1, 18, 17, 3, 318e6, time.UTC)
	ns := uint64(stamp.Add(time.Second).UnixNano())
	obs := uint64(stamp.Add(2 * time.Second).UnixNano())
	for i, tc := range []struct {
		lr   *logsv1.LogRecord
		want time.Time
	}{
		{&logsv1.LogRecord{TimeUnixNano: ns, ObservedTimeUnixNano: obs,
			Attributes: []*commonv1.KeyValue{str("event.timestamp", "2026-12-01T18:17:03.318Z")}}, stamp},
		{&logsv1.LogRecord{TimeUnixNano: ns, ObservedTimeUnixNano: obs}, stamp.Add(time.Second)},
		// Codex: timeUnixNano 0
		{&logsv1.LogRecord{ObservedTimeUnixNano: obs}, stamp.Add(2 * time.Second)},
		// an event.timestamp that is no time, a time past int64
		{&logsv1.LogRecord{TimeUnixNano: 1 << 63, ObservedTimeUnixNano: obs,
			Attributes: []*commonv1.KeyValue{str("event.timestamp", "yesterday")}}, stamp.Add(2 * time.Second)},
		{&logsv1.LogRecord{}, time.Time{}},
	} {
		if got := one(tc.lr).Time; !got.Equal(tc.want) || got.Location() != time.UTC {
			t.Errorf("%d: %v, want %v", i, got, tc.want)
		}
	}
}

func TestEventResourceAndScope(t *testing.T) {
	d := &logsv1.LogsData{ResourceLogs: []*logsv1.ResourceLogs{{
		Resource: &resourcev1.Resource{Attributes: []*commonv1.KeyValue{str("service.name", "codex_exec"), str("host.name", "vm")}},
		ScopeLogs: []*logsv1.ScopeLogs{{Scope: &commonv1.InstrumentationScope{Name: "codex_otel.log_only"},
			LogRecords: []*logsv1.LogRecord{{}, {}}}},
	}}}
	evs := telemetry.Events(d)
	if len(evs) != 2 || evs[1].Scope != "codex_otel.log_only" {
		t.Fatalf("%+v", evs)
	}
	if host, _ := evs[1].Resource.Str("host.name"); host != "vm" {
		t.Fatalf("resource %v", evs[1].Resource)
	}
}
