package telemetry_test

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spinehq/spine/telemetry"
	collogs "go.opentelemetry.io/proto/slim/otlp/collector/logs/v1"
	colmetrics "go.opentelemetry.io/proto/slim/otlp/collector/metrics/v1"
	logsv1 "go.opentelemetry.io/proto/slim/otlp/logs/v1"
	metricsv1 "go.opentelemetry.io/proto/slim/otlp/metrics/v1"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// TestDecodeEveryCapture decodes every body the real apps posted, each as
// its request said (Content-Type, Content-Encoding), into something.
func TestDecodeEveryCapture(t *testing.T) {
	for _, c := range captures(t, "") {
		switch c.signal() {
		case "logs":
			d, err := telemetry.DecodeLogs(c.body, c.format)
			if err != nil || len(telemetry.Events(d)) == 0 {
				t.Errorf("%s: %v, %d events", c.File, err, len(telemetry.Events(d)))
			}
		case "metrics":
			d, err := telemetry.DecodeMetrics(c.body, c.format)
			if err != nil || len(d.GetResourceMetrics()) == 0 {
				t.Errorf("%s: %v, %d resources", c.File, err, len(d.GetResourceMetrics()))
			}
		default:
			t.Errorf("%s: posted to %s", c.File, c.Path)
		}
	}
}

// TestJSONMatchesProtobuf: the same scripted run exported as JSON and as
// protobuf gives the same events with attributes of the same types, so
// the JSON leniency (Claude Code's integers as numbers, Codex's as
// strings, Codex's hex ids) reads what the binary encoding carries.
func TestJSONMatchesProtobuf(t *testing.T) {
	for _, app := range []string{"claude-code", "codex"} {
		t.Run(app, func(t *testing.T) {
			js, pb := shape(events(t, app+"-json-logs")), shape(events(t, app+"-protobuf-logs"))
			if !slices.Equal(js, pb) {
				t.Fatalf("JSON and protobuf differ:\nonly JSON: %v\nonly protobuf: %v", minus(js, pb), minus(pb, js))
			}
		})
	}
}

// shape is the set of (event, attribute, Go type) an app sent.
func shape(evs []telemetry.Event) []string {
	set := map[string]bool{}
	for _, e := range evs {
		for k, v := range e.Attrs {
			set[fmt.Sprintf("%s %s %T", e.Name, k, v)] = true
		}
	}
	return slices.Sorted(maps.Keys(set))
}

func minus(a, b []string) []string {
	var out []string
	for _, s := range a {
		if !slices.Contains(b, s) {
			out = append(out, s)
		}
	}
	return out
}

// TestClaudeCodeCaptures reads what Claude Code reported of the scripted
// run (six model requests, a Write, a Bash that outlasts a log export,
// one that fails, a subagent): its names, session, times and the typed
// attributes a projection needs.
func TestClaudeCodeCaptures(t *testing.T) {
	for _, prefix := range []string{"claude-code-json-logs", "claude-code-protobuf-logs", "claude-code-json-gzip-logs"} {
		t.Run(prefix, func(t *testing.T) {
			evs := events(t, prefix)
			checkOneSession(t, evs)
			checkClaudeRequests(t, named(evs, "claude_code.api_request"), strings.Contains(prefix, "gzip"))
			checkClaudeTools(t, named(evs, "claude_code.tool_result"))
		})
	}
}

// checkOneSession: every event names the one session, and its time is
// its event.timestamp.
func checkOneSession(t *testing.T, evs []telemetry.Event) {
	t.Helper()
	for _, e := range evs {
		if e.Name == "" || e.SessionID == "" || e.SessionID != evs[0].SessionID {
			t.Fatalf("event %q of session %q; the first is %q", e.Name, e.SessionID, evs[0].SessionID)
		}
		ts, _ := e.Attrs.Str("event.timestamp")
		if want, err := time.Parse(time.RFC3339, ts); err != nil || !e.Time.Equal(want) {
			t.Fatalf("%s at %v, event.timestamp %q", e.Name, e.Time, ts)
		}
	}
}

// checkClaudeRequests: one api_request per model request (the
// session-title request too when non-essential traffic is on), with the
// usage and cost as numbers.
func checkClaudeRequests(t *testing.T, reqs []telemetry.Event, title bool) {
	t.Helper()
	want := 6
	if title {
		want = 7
	}
	if len(reqs) != want {
		t.Fatalf("%d api_request events, want %d", len(reqs), want)
	}
	titles := 0
	for _, e := range reqs {
		id, _ := e.Attrs.Str("request_id")
		cost, okCost := e.Attrs.Float("cost_usd")
		in, okIn := e.Attrs.Int("input_tokens")
		_, okOut := e.Attrs.Int("output_tokens")
		_, okRead := e.Attrs.Int("cache_read_tokens")
		_, okWrite := e.Attrs.Int("cache_creation_tokens")
		if !strings.HasPrefix(id, "req_") || !okCost || cost <= 0 || !okIn || in <= 0 || !okOut || !okRead || !okWrite {
			t.Fatalf("api_request %v", e.Attrs)
		}
		if src, _ := e.Attrs.Str("query_source"); src == "generate_session_title" {
			titles++
		}
	}
	if title != (titles == 1) {
		t.Fatalf("%d session-title requests; non-essential traffic on: %v", titles, title)
	}
}

// checkClaudeTools: a tool_result per tool call, success a string read as
// a bool, the failed command's error_type.
func checkClaudeTools(t *testing.T, results []telemetry.Event) {
	t.Helper()
	var tools, failed []string
	for _, e := range results {
		name, _ := e.Attrs.Str("tool_name")
		ok, okOK := e.Attrs.Bool("success")
		_, okDur := e.Attrs.Int("duration_ms")
		if id, _ := e.Attrs.Str("tool_use_id"); !okOK || !okDur || !strings.HasPrefix(id, "toolu_") {
			t.Fatalf("tool_result %v", e.Attrs)
		}
		tools = append(tools, name)
		if !ok {
			kind, _ := e.Attrs.Str("error_type")
			failed = append(failed, name+" "+kind)
		}
	}
	if !slices.Equal(tools, []string{"Write", "Bash", "Bash", "Agent"}) || !slices.Equal(failed, []string{"Bash ShellError"}) {
		t.Fatalf("tool results %v, failed %v", tools, failed)
	}
}

// TestCodexCaptures reads what Codex reported of the scripted run (three
// responses, two commands, one failing): names from event.name though
// the records' EventName is a source line, times from event.timestamp
// though timeUnixNano is 0, token counts from response.completed, which
// comes twice per response with the counts on one.
func TestCodexCaptures(t *testing.T) {
	for _, prefix := range []string{"codex-json-logs", "codex-protobuf-logs", "codex-json-chatgpt-logs"} {
		t.Run(prefix, func(t *testing.T) {
			evs := events(t, prefix)
			var conv []telemetry.Event
			for _, e := range evs {
				if e.SessionID != "" {
					conv = append(conv, e)
				}
			}
			checkOneSession(t, conv)
			checkCodexTokens(t, named(conv, "codex.sse_event"))
			checkCodexTools(t, named(conv, "codex.tool_result"))
			checkCodexAuth(t, conv, strings.Contains(prefix, "chatgpt"))
		})
	}
}

// checkCodexTokens: response.completed twice per response, the counts on
// the second, the input count including the cached part, each count read
// whether it came as a string or an int.
func checkCodexTokens(t *testing.T, sse []telemetry.Event) {
	t.Helper()
	var completed, counted int
	var inputs []int64
	for _, e := range sse {
		if kind, _ := e.Attrs.Str("event.kind"); kind != "response.completed" {
			continue
		}
		completed++
		in, ok := e.Attrs.Int("input_token_count")
		if !ok {
			continue
		}
		counted++
		cached, ok1 := e.Attrs.Int("cached_token_count")
		_, ok2 := e.Attrs.Int("output_token_count")
		_, ok3 := e.Attrs.Int("reasoning_token_count")
		if !ok1 || !ok2 || !ok3 || cached > in {
			t.Fatalf("response.completed %v", e.Attrs)
		}
		inputs = append(inputs, in)
	}
	// the fake model's usage: input + cached per response
	if completed != 6 || counted != 3 || !slices.Equal(inputs, []int64{3900, 4000, 4050}) {
		t.Fatalf("%d response.completed, %d with counts, inputs %v", completed, counted, inputs)
	}
}

// checkCodexTools: a tool_result per command, success read as a bool. A
// command that exits 3 is a success to Codex: the exit code is only in
// the output text.
func checkCodexTools(t *testing.T, results []telemetry.Event) {
	t.Helper()
	var got []bool
	for _, e := range results {
		ok, isBool := e.Attrs.Bool("success")
		if id, _ := e.Attrs.Str("call_id"); !isBool || !strings.HasPrefix(id, "call_") {
			t.Fatalf("tool_result %v", e.Attrs)
		}
		got = append(got, ok)
	}
	if !slices.Equal(got, []bool{true, true}) {
		t.Fatalf("tool results' success %v", got)
	}
}

// checkCodexAuth: auth_mode only when signed in with ChatGPT, as Codex
// spells it ("Chatgpt"), with the account; none with a provider's API key.
func checkCodexAuth(t *testing.T, evs []telemetry.Event, chatgpt bool) {
	t.Helper()
	for _, e := range evs {
		mode, ok := e.Attrs.Str("auth_mode")
		account, _ := e.Attrs.Str("user.account_id")
		if ok != chatgpt || chatgpt && (mode != "Chatgpt" || account == "") {
			t.Fatalf("%s: auth_mode %q (%v), account %q; signed in with ChatGPT: %v", e.Name, mode, ok, account, chatgpt)
		}
	}
}

// TestCodexRecordsWithoutSession: the records Codex sends outside the
// conversation decode too (the model-list request before it starts, a
// debug line with no name at all).
func TestCodexRecordsWithoutSession(t *testing.T) {
	var unnamed int
	for _, e := range events(t, "codex-json-logs") {
		if e.SessionID == "" && e.Name == "" {
			unnamed++
		}
	}
	if unnamed == 0 {
		t.Fatal("no record without a name or session: the captures changed, or Events names what has no name")
	}
}

// TestMetricsCaptures: both apps' metrics decode with their names and
// delta temporality; Claude Code's carry session.id, Codex's no
// conversation.id.
func TestMetricsCaptures(t *testing.T) {
	for prefix, want := range map[string]string{"claude-code-json-metrics": "claude_code.cost.usage",
		"claude-code-protobuf-metrics": "claude_code.cost.usage", "codex-json-metrics": "codex.turn.token_usage",
		"codex-protobuf-metrics": "codex.turn.token_usage"} {
		var names []string
		var session bool
		for _, d := range metrics(t, prefix) {
			for _, rm := range d.GetResourceMetrics() {
				for _, sm := range rm.GetScopeMetrics() {
					for _, m := range sm.GetMetrics() {
						names = append(names, m.GetName())
						session = session || strings.Contains(m.String(), "session.id") ||
							strings.Contains(m.String(), "conversation.id")
					}
				}
			}
		}
		if !slices.Contains(names, want) || session != strings.HasPrefix(prefix, "claude") {
			t.Errorf("%s: metrics %v, a session id on them: %v", prefix, names, session)
		}
	}
}

// TestDataIsTheRequestsTwin: LogsData and MetricsData, which the decoders
// fill, are ExportLogsServiceRequest and ExportMetricsServiceRequest on
// the wire (OTLP: `repeated ResourceLogs resource_logs = 1;`, and the
// same for metrics), so a request body decodes into them unchanged.
func TestDataIsTheRequestsTwin(t *testing.T) {
	type msg = interface{ ProtoReflect() protoreflect.Message }
	for _, pair := range [][2]msg{{&logsv1.LogsData{}, &collogs.ExportLogsServiceRequest{}},
		{&metricsv1.MetricsData{}, &colmetrics.ExportMetricsServiceRequest{}}} {
		data, req := pair[0].ProtoReflect().Descriptor(), pair[1].ProtoReflect().Descriptor()
		shape := func(d protoreflect.MessageDescriptor) string {
			f := d.Fields().ByNumber(1)
			if d.Fields().Len() != 1 || f == nil || !f.IsList() {
				return "not one repeated field 1"
			}
			return fmt.Sprintf("%s %s %s", f.Name(), f.JSONName(), f.Message().FullName())
		}
		if shape(data) != shape(req) {
			t.Errorf("%s is %q, %s %q", data.FullName(), shape(data), req.FullName(), shape(req))
		}
	}
}
