package streams_test

import (
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/spinehq/spine/internal/jsonfields"
	"github.com/spinehq/spine/internal/spinetest"
	"github.com/spinehq/spine/streams"
)

// boundedField is one free-text field, its bound, and how to set it on an
// envelope of a type that carries it.
type boundedField struct {
	field string
	limit int
	build func(v string) *streams.Envelope
}

func onEvent(set func(ev *streams.Event, v string)) func(string) *streams.Envelope {
	return func(v string) *streams.Envelope {
		ev := &streams.Event{Action: "file_write", Path: "a"}
		set(ev, v)
		return spinetest.Event("s1", 1, ev)
	}
}

func onEnd(set func(e *streams.Envelope, v string)) func(string) *streams.Envelope {
	return func(v string) *streams.Envelope {
		e := spinetest.End("s1", "done", "claude-sonnet-4", "high")
		set(e, v)
		return e
	}
}

func onArtifact(set func(a *streams.Artifact, v string)) func(string) *streams.Envelope {
	return onEnd(func(e *streams.Envelope, v string) {
		a := streams.Artifact{Name: "a.txt"}
		set(&a, v)
		e.Artifacts = []streams.Artifact{a}
	})
}

func onTelemetry(kind string, set func(t *streams.Telemetry, v string)) func(string) *streams.Envelope {
	return func(v string) *streams.Envelope {
		t := &streams.Telemetry{Kind: kind, Source: streams.TelemetryHook, RequestID: "r1", ToolUseID: "t1", Phase: streams.PhasePost}
		set(t, v)
		return spinetest.Telemetry("s1", 1, "k", t)
	}
}

// telemetryBounds are the telemetry's own bounded fields, and each bounded
// field of an event again as a telemetry tool's.
func telemetryBounds(fields []boundedField) []boundedField {
	req, tool := streams.TelemetryRequest, streams.TelemetryTool
	out := []boundedField{
		{"telemetry.requestId", streams.MaxNameLen, onTelemetry(req, func(t *streams.Telemetry, v string) { t.RequestID = v })},
		{"telemetry.model", streams.MaxNameLen, onTelemetry(req, func(t *streams.Telemetry, v string) { t.Model = v })},
		{"telemetry.effort", streams.MaxNameLen, onTelemetry(req, func(t *streams.Telemetry, v string) { t.Effort = v })},
		{"telemetry.querySource", streams.MaxNameLen, onTelemetry(req, func(t *streams.Telemetry, v string) { t.QuerySource = v })},
		{"telemetry.toolUseId", streams.MaxIDLen, onTelemetry(tool, func(t *streams.Telemetry, v string) { t.ToolUseID = v })},
		{"telemetry.tool", streams.MaxNameLen, onTelemetry(tool, func(t *streams.Telemetry, v string) { t.Tool = v })},
		{"telemetry.errorType", streams.MaxNameLen, onTelemetry(tool, func(t *streams.Telemetry, v string) { t.ErrorType = v })},
		{"telemetry.promptId", streams.MaxNameLen, onTelemetry(streams.TelemetryPrompt, func(t *streams.Telemetry, v string) { t.PromptID = v })},
		{"telemetry.reason", streams.MaxReasonLen, onTelemetry(streams.TelemetryEnd, func(t *streams.Telemetry, v string) { t.Reason = v })},
	}
	for _, f := range fields {
		if !strings.HasPrefix(f.field, "event.") {
			continue
		}
		build := f.build
		out = append(out, boundedField{"telemetry." + f.field, f.limit, func(v string) *streams.Envelope {
			ev := build(v).Event
			return onTelemetry(tool, func(t *streams.Telemetry, _ string) { t.Event = ev })(v)
		}})
	}
	return append(fields, out...)
}

var boundedFields = telemetryBounds([]boundedField{
	{"appSessionRef", streams.MaxNameLen, func(v string) *streams.Envelope { e := spinetest.Start("s1"); e.AppSessionRef = v; return e }},
	{"workspace", streams.MaxPathLen, func(v string) *streams.Envelope { e := spinetest.Start("s1"); e.Workspace = v; return e }},
	{"prompt", streams.MaxPromptLen, func(v string) *streams.Envelope { e := spinetest.Start("s1"); e.Prompt = v; return e }},
	{"text", streams.MaxChunkText, func(v string) *streams.Envelope { return spinetest.Text("s1", 1, v) }},
	{"reason", streams.MaxReasonLen, func(v string) *streams.Envelope { return spinetest.Disconnect("w1", v) }},
	{"error", streams.MaxErrorLen, onEnd(func(e *streams.Envelope, v string) { e.Error = v })},
	{"model", streams.MaxNameLen, onEnd(func(e *streams.Envelope, v string) { e.Model = v })},
	{"effort", streams.MaxNameLen, onEnd(func(e *streams.Envelope, v string) { e.Effort = v })},
	{"server", streams.MaxNameLen, func(v string) *streams.Envelope { e := spinetest.MCP("s1", "c1", "t"); e.Server = v; return e }},
	{"tool", streams.MaxNameLen, func(v string) *streams.Envelope { e := spinetest.MCP("s1", "c1", "t"); e.Tool = v; return e }},
	{"event.command", streams.MaxCommandLen, onEvent(func(ev *streams.Event, v string) { ev.Command = v })},
	{"event.output", streams.MaxContentLen, onEvent(func(ev *streams.Event, v string) { ev.Output = v })},
	{"event.path", streams.MaxPathLen, onEvent(func(ev *streams.Event, v string) { ev.Path = v })},
	{"event.content", streams.MaxContentLen, onEvent(func(ev *streams.Event, v string) { ev.Content = v })},
	{"event.url", streams.MaxURLLen, onEvent(func(ev *streams.Event, v string) { ev.URL = v })},
	{"event.server", streams.MaxNameLen, onEvent(func(ev *streams.Event, v string) { ev.Server = v })},
	{"event.tool", streams.MaxNameLen, onEvent(func(ev *streams.Event, v string) { ev.Tool = v })},
	{"event.callId", streams.MaxIDLen, onEvent(func(ev *streams.Event, v string) { ev.CallID = v })},
	{"artifacts.name", streams.MaxPathLen, onArtifact(func(a *streams.Artifact, v string) { a.Name = v })},
	{"artifacts.content", streams.MaxContentLen, onArtifact(func(a *streams.Artifact, v string) { a.Content = v })},
})

// ruledFields are the string fields a rule other than a length holds:
// ids (subject-safe, at most MaxIDLen), digests (blake3: and 64 hex
// digits) and closed value sets.
var ruledFields = []string{"type", "id", "sessionId", "app", "kind", "level", "owner.org", "owner.member", "planId",
	"taskId", "stepId", "parentRunId", "workerId", "stream", "event.action", "control", "status", "billing", "door", "callId",
	"event.contentDigest", "artifacts.contentDigest", "telemetry.kind", "telemetry.source", "telemetry.phase",
	"telemetry.promptDigest", "telemetry.event.action", "telemetry.event.contentDigest"}

// Every string field of an envelope (string, *string or []string, nested
// ones too) has a bound or a rule: a field added without one fails here.
func TestEveryStringFieldIsBounded(t *testing.T) {
	var names []string
	for _, f := range boundedFields {
		names = append(names, f.field)
	}
	names = append(names, ruledFields...)
	for _, path := range jsonfields.Strings(reflect.TypeFor[streams.Envelope](), reflect.TypeFor[streams.Usage]()) {
		if !slices.Contains(names, path) {
			t.Errorf("string field %s has no bound: add it to limits.go and docs/limits.md", path)
		}
	}
}

// A field at its bound is accepted; one byte over is field_too_long, and
// the refusal names the field and the bound but never repeats the value.
func TestFieldBounds(t *testing.T) {
	for _, f := range boundedFields {
		t.Run(f.field, func(t *testing.T) {
			if err := f.build(strings.Repeat("x", f.limit)).Validate(); err != nil {
				t.Fatalf("at the bound: %v", err)
			}
			err := f.build(strings.Repeat("x", f.limit+1)).Validate()
			rej, ok := streams.AsRejection(err)
			if !ok || rej.Reason != streams.ReasonFieldTooLong {
				t.Fatalf("one over the bound: %v, want %s", err, streams.ReasonFieldTooLong)
			}
			name := f.field[strings.LastIndex(f.field, ".")+1:]
			if !strings.Contains(rej.Detail, name) || !strings.Contains(rej.Detail, strconv.Itoa(f.limit)) ||
				strings.Contains(rej.Detail, "xxxxxxxx") {
				t.Fatalf("detail %q must name %s and %d, never the value", rej.Detail, name, f.limit)
			}
		})
	}
}
