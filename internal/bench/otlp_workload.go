package bench

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	commonv1 "go.opentelemetry.io/proto/slim/otlp/common/v1"
	logsv1 "go.opentelemetry.io/proto/slim/otlp/logs/v1"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/spinehq/spine/telemetry"
)

// otlpTemplates are what the workload copies: the resource, scope and one
// api_request and one tool_result record of a real Claude Code export
// (testdata/otlp's claude-code-protobuf captures).
type otlpTemplates struct {
	resource      *logsv1.ResourceLogs // its scope logs emptied
	scope         *commonv1.InstrumentationScope
	request, tool *logsv1.LogRecord
}

// loadTemplates reads the captures in dir.
func loadTemplates(dir string) (*otlpTemplates, error) {
	files, _ := filepath.Glob(filepath.Join(dir, "claude-code-protobuf-logs-*.pb"))
	t := &otlpTemplates{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		logs, err := telemetry.DecodeLogs(b, telemetry.Protobuf)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		t.take(logs)
	}
	if t.request == nil || t.tool == nil {
		return nil, fmt.Errorf("%w: no Claude Code api_request and tool_result in %s/claude-code-protobuf-logs-*.pb: pass --captures",
			ErrInvalidConfig, dir)
	}
	return t, nil
}

// take keeps the first api_request and tool_result of logs, with their
// resource and scope.
func (t *otlpTemplates) take(logs *logsv1.LogsData) {
	for _, rl := range logs.ResourceLogs {
		for _, sl := range rl.ScopeLogs {
			for _, lr := range sl.LogRecords {
				name, _ := attrOf(lr, "event.name")
				switch {
				case name == "api_request" && t.request == nil:
					t.request = lr
				case name == "tool_result" && t.tool == nil:
					t.tool = lr
				default:
					continue
				}
				if t.resource == nil {
					t.resource = &logsv1.ResourceLogs{Resource: rl.Resource, SchemaUrl: rl.SchemaUrl}
					t.scope = sl.Scope
				}
			}
		}
	}
}

func attrOf(lr *logsv1.LogRecord, key string) (string, bool) {
	for _, kv := range lr.Attributes {
		if kv.Key == key {
			return kv.Value.GetStringValue(), true
		}
	}
	return "", false
}

// setAttr replaces an attribute's value, or adds it.
func setAttr(lr *logsv1.LogRecord, key string, v *commonv1.AnyValue) {
	for _, kv := range lr.Attributes {
		if kv.Key == key {
			kv.Value = v
			return
		}
	}
	lr.Attributes = append(lr.Attributes, &commonv1.KeyValue{Key: key, Value: v})
}

func str(s string) *commonv1.AnyValue {
	return &commonv1.AnyValue{Value: &commonv1.AnyValue_StringValue{StringValue: s}}
}

func integer(n int64) *commonv1.AnyValue {
	return &commonv1.AnyValue{Value: &commonv1.AnyValue_IntValue{IntValue: n}}
}

// otlpWorkload is one phase's sessions: each Events records long,
// api_requests and tool_results in turn, cut into export requests of
// PerRequest records as the app's batching does.
type otlpWorkload struct {
	t          *otlpTemplates
	run, phase string
	sessions   int
	events     int
	perRequest int
	start      time.Time
}

// sessionID is session i's app session id.
func (w *otlpWorkload) sessionID(i int) string {
	return fmt.Sprintf("bench-%s-%s-%05d", w.run, w.phase, i)
}

// record is event j of session i: a copy of the template with the
// session's ids, its sequence and its time.
func (w *otlpWorkload) record(i, j int) *logsv1.LogRecord {
	tmpl, key, id := w.t.request, "request_id", fmt.Sprintf("req_%s%s%05d%05d", w.run, w.phase, i, j)
	if j%2 == 1 {
		tmpl, key, id = w.t.tool, "tool_use_id", fmt.Sprintf("toolu_%s%s%05d%05d", w.run, w.phase, i, j)
	}
	lr := proto.Clone(tmpl).(*logsv1.LogRecord)
	at := w.start.Add(time.Duration(i*w.events+j) * time.Millisecond)
	lr.TimeUnixNano, lr.ObservedTimeUnixNano = uint64(at.UnixNano()), uint64(at.UnixNano())
	setAttr(lr, "session.id", str(w.sessionID(i)))
	setAttr(lr, "event.sequence", integer(int64(j)))
	setAttr(lr, "event.timestamp", str(at.UTC().Format("2006-01-02T15:04:05.000Z")))
	setAttr(lr, key, str(id))
	return lr
}

// requests are the phase's export requests, sessions taking turns (each
// session's in order), as many apps exporting at once do.
func (w *otlpWorkload) requests() []*logsv1.LogsData {
	per := (w.events + w.perRequest - 1) / w.perRequest
	out := make([]*logsv1.LogsData, 0, w.sessions*per)
	for k := range per {
		for i := range w.sessions {
			var recs []*logsv1.LogRecord
			for j := k * w.perRequest; j < min((k+1)*w.perRequest, w.events); j++ {
				recs = append(recs, w.record(i, j))
			}
			rl := proto.Clone(w.t.resource).(*logsv1.ResourceLogs)
			rl.ScopeLogs = []*logsv1.ScopeLogs{{Scope: w.t.scope, LogRecords: recs}}
			out = append(out, &logsv1.LogsData{ResourceLogs: []*logsv1.ResourceLogs{rl}})
		}
	}
	return out
}

// otlpBodies are one phase's request bodies in its encoding: protobuf, or
// OTLP/JSON as protojson writes it (the spec's form: integers as strings;
// the door takes Claude Code's numbers too).
func otlpBodies(reqs []*logsv1.LogsData, encoding string) ([][]byte, error) {
	out := make([][]byte, len(reqs))
	for i, r := range reqs {
		var err error
		if encoding == otlpProtobuf {
			out[i], err = proto.Marshal(r)
		} else {
			out[i], err = protojson.Marshal(r)
		}
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}
