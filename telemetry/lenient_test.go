package telemetry_test

import (
	"encoding/base64"
	"encoding/hex"
	"errors"
	"regexp"
	"strings"
	"testing"

	"github.com/spinehq/spine/telemetry"
	logsv1 "go.opentelemetry.io/proto/slim/otlp/logs/v1"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

// body is the decompressed body of one capture file.
func body(t *testing.T, file string) []byte {
	t.Helper()
	for _, c := range captures(t, file) {
		if c.File == file {
			return c.body
		}
	}
	t.Fatalf("no capture %s", file)
	return nil
}

func decodeLogs(t *testing.T, b []byte) *logsv1.LogsData {
	t.Helper()
	d, err := telemetry.DecodeLogs(b, telemetry.JSON)
	if err != nil {
		t.Fatalf("%v (%v)", err, errors.Unwrap(err))
	}
	return d
}

// TestIntegersAsNumbersOrStrings: Claude Code writes integers as JSON
// numbers ("intValue":4), Codex and the spec as strings; both decode to
// the same message (the spec's form here is protojson's own output).
func TestIntegersAsNumbersOrStrings(t *testing.T) {
	for _, file := range []string{"claude-code-json-logs-1.json", "codex-json-logs-1.json"} {
		numbers := body(t, file)
		d := decodeLogs(t, numbers)
		strs, err := protojson.Marshal(d)
		if err != nil {
			t.Fatal(err)
		}
		if !proto.Equal(decodeLogs(t, strs), d) {
			t.Errorf("%s: re-encoded with the spec's strings, it decodes to another message", file)
		}
	}
	if !strings.Contains(string(body(t, "claude-code-json-logs-1.json")), `"intValue":0`) {
		t.Fatal("the Claude Code capture has no integer as a JSON number any more")
	}
}

// hexTraceID is the first non-empty traceId of a JSON body, as written.
var hexTraceID = regexp.MustCompile(`"traceId": ?"([0-9a-f]{32})"`)

// TestHexAndBase64IDs: Codex writes trace and span ids in hex, as the
// spec says (they are set when its trace_exporter is on); generic
// protobuf encoders write base64. Both decode to the id's 16 (8) bytes.
func TestHexAndBase64IDs(t *testing.T) {
	var raw, m []byte
	for _, c := range captures(t, "codex-json-chatgpt-logs") {
		if s := hexTraceID.FindSubmatch(c.body); s != nil && m == nil {
			raw, m = c.body, s[1]
		}
	}
	if m == nil {
		t.Fatal("no hex traceId in the Codex captures with traces on")
	}
	d := decodeLogs(t, raw)
	checkIDs(t, d, string(m))
	b64 := regexp.MustCompile(`"(trace|span)Id": ?"([0-9a-f]+)"`).ReplaceAllFunc(raw, func(s []byte) []byte {
		kv := strings.SplitN(string(s), `"`, 5)
		id, _ := hex.DecodeString(kv[3])
		return []byte(`"` + kv[1] + `":"` + base64.StdEncoding.EncodeToString(id) + `"`)
	})
	if !proto.Equal(decodeLogs(t, b64), d) {
		t.Fatal("the ids in base64 decode to another message than in hex")
	}
}

// checkIDs: every id is 16 or 8 bytes, and the first trace id is first.
func checkIDs(t *testing.T, d *logsv1.LogsData, first string) {
	t.Helper()
	var ids []string
	for _, rl := range d.GetResourceLogs() {
		for _, sl := range rl.GetScopeLogs() {
			for _, lr := range sl.GetLogRecords() {
				if n, m := len(lr.GetTraceId()), len(lr.GetSpanId()); n != 0 && n != 16 || m != 0 && m != 8 {
					t.Fatalf("trace id of %d bytes, span id of %d", n, m)
				}
				if len(lr.GetTraceId()) > 0 {
					ids = append(ids, hex.EncodeToString(lr.GetTraceId()))
				}
			}
		}
	}
	if len(ids) == 0 || ids[0] != first {
		t.Fatalf("trace ids %v, the body's first %s", ids, first)
	}
}

// TestScalarAsObject: {"doubleValue":{}} (an exporter with no number to
// give) leaves that value unset and the rest as sent.
func TestScalarAsObject(t *testing.T) {
	raw := body(t, "claude-code-json-logs-1.json")
	cost := regexp.MustCompile(`"doubleValue":[0-9.e-]+`)
	if !cost.Match(raw) {
		t.Fatal("no doubleValue in the Claude Code capture")
	}
	want := telemetry.Events(decodeLogs(t, raw))
	got := telemetry.Events(decodeLogs(t, cost.ReplaceAll(raw, []byte(`"doubleValue":{}`))))
	if len(got) != len(want) {
		t.Fatalf("%d events, want %d", len(got), len(want))
	}
	for i, e := range named(got, "claude_code.api_request") {
		if v, ok := e.Attrs["cost_usd"]; !ok || v != nil {
			t.Fatalf("request %d: cost_usd %v (present %v), want an empty value", i, v, ok)
		}
		if _, ok := e.Attrs.Int("input_tokens"); !ok {
			t.Fatalf("request %d lost its other attributes: %v", i, e.Attrs)
		}
	}
}

// TestBoolAsString: "boolValue":"true" is the bool.
func TestBoolAsString(t *testing.T) {
	raw := body(t, "codex-json-logs-1.json")
	b := regexp.MustCompile(`"boolValue": ?(true|false)`)
	if !b.Match(raw) {
		t.Fatal("no boolValue in the Codex capture")
	}
	quoted := b.ReplaceAll(raw, []byte(`"boolValue":"$1"`))
	if !proto.Equal(decodeLogs(t, quoted), decodeLogs(t, raw)) {
		t.Fatal("bools as strings decode to another message")
	}
}

// TestUnknownFieldsDropped: a field OTLP does not define (a newer
// exporter's) is ignored, wherever it is.
func TestUnknownFieldsDropped(t *testing.T) {
	raw := body(t, "claude-code-json-logs-1.json")
	more := strings.Replace(string(raw), `"logRecords":[`, `"futureField":{"x":[1]},"logRecords":[`, 1)
	more = strings.Replace(more, `{"resourceLogs"`, `{"futureTop":true,"resourceLogs"`, 1)
	if more == string(raw) {
		t.Fatal("the capture's shape changed")
	}
	if !proto.Equal(decodeLogs(t, []byte(more)), decodeLogs(t, raw)) {
		t.Fatal("unknown fields changed the message")
	}
}

// TestEmptyBody: an empty body is an empty request in either format.
func TestEmptyBody(t *testing.T) {
	for _, f := range []telemetry.Format{telemetry.JSON, telemetry.Protobuf} {
		d, err := telemetry.DecodeLogs(nil, f)
		m, err2 := telemetry.DecodeMetrics(nil, f)
		if err != nil || err2 != nil || len(telemetry.Events(d)) != 0 || len(m.GetResourceMetrics()) != 0 {
			t.Fatalf("%v: %v, %v", f, err, err2)
		}
	}
}

// TestMalformedQuotesNothing: a body that does not decode is ErrMalformed,
// and the error says nothing of what the body held.
func TestMalformedQuotesNothing(t *testing.T) {
	const secret = "hunter2-the-prompt"
	for name, tc := range map[string]struct {
		body string
		f    telemetry.Format
	}{
		"bad int":        {`{"resourceLogs":[{"scopeLogs":[{"logRecords":[{"attributes":[{"key":"k","value":{"intValue":"` + secret + `"}}]}]}]}]}`, telemetry.JSON},
		"bad metric int": {`{"resourceMetrics":[{"scopeMetrics":[{"metrics":[{"sum":{"dataPoints":[{"asInt":"` + secret + `"}]}}]}]}]}`, telemetry.JSON},
		"not an object":  {`["` + secret + `"]`, telemetry.JSON},
		"truncated":      {`{"resourceLogs":[{"` + secret, telemetry.JSON},
		"two values":     {`{"resourceLogs":[{"scopeLogs":[{"logRecords":[{"body":{"stringValue":"` + secret + `","intValue":1}}]}]}]}`, telemetry.JSON},
		"protobuf":       {"\x0a\xff\xff" + secret, telemetry.Protobuf},
	} {
		var err error
		if strings.Contains(name, "metric") {
			_, err = telemetry.DecodeMetrics([]byte(tc.body), tc.f)
		} else {
			_, err = telemetry.DecodeLogs([]byte(tc.body), tc.f)
		}
		if !errors.Is(err, telemetry.ErrMalformed) || strings.Contains(err.Error(), secret) {
			t.Errorf("%s: %v", name, err)
		}
	}
}
