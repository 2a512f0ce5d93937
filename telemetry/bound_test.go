package telemetry_test

import (
	"errors"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/spinehq/spine/telemetry"
)

// field is protobuf field num holding the bytes of a message.
func field(num protowire.Number, msg []byte) []byte {
	return protowire.AppendBytes(protowire.AppendTag(nil, num, protowire.BytesType), msg)
}

// repeated is n empty messages in field num.
func repeated(num protowire.Number, n int) []byte {
	return []byte(strings.Repeat(string(field(num, nil)), n))
}

// logsOf is a logs export of one resource and one scope holding records.
func logsOf(records []byte) []byte {
	return field(1, field(2, records)) // resourceLogs { scopeLogs { logRecords… } }
}

// jsonLogsOf is the same in JSON, records the logRecords array's elements.
func jsonLogsOf(key, records string) []byte {
	return []byte(`{"resourceLogs":[{"scopeLogs":[{"` + key + `":[` + records + `]}]}]}`)
}

// jsonEmpty is n empty objects, comma separated.
func jsonEmpty(n int) string { return strings.TrimSuffix(strings.Repeat("{},", n), ",") }

// An export of more than MaxRecords records (empty ones, two bytes each
// in protobuf: millions in a few megabytes) is refused before it is
// decoded; MaxRecords is taken. The JSON scan finds the records field by
// its JSON or proto name, escaped or not, as protojson does.
func TestRecordsAreBounded(t *testing.T) {
	n := telemetry.MaxRecords
	for name, c := range map[string]struct {
		body []byte
		f    telemetry.Format
		err  error
	}{
		"protobuf at the bound":  {logsOf(repeated(2, n)), telemetry.Protobuf, nil},
		"protobuf over":          {logsOf(repeated(2, n+1)), telemetry.Protobuf, telemetry.ErrTooManyRecords},
		"protobuf in two scopes": {field(1, append(field(2, repeated(2, n)), field(2, repeated(2, 1))...)), telemetry.Protobuf, telemetry.ErrTooManyRecords},
		"JSON at the bound":      {jsonLogsOf("logRecords", jsonEmpty(n)), telemetry.JSON, nil},
		"JSON over":              {jsonLogsOf("logRecords", jsonEmpty(n+1)), telemetry.JSON, telemetry.ErrTooManyRecords},
		"JSON proto name":        {jsonLogsOf("log_records", jsonEmpty(n+1)), telemetry.JSON, telemetry.ErrTooManyRecords},
		"JSON escaped name":      {jsonLogsOf(`log\u0052ecords`, jsonEmpty(n+1)), telemetry.JSON, telemetry.ErrTooManyRecords},
	} {
		d, err := telemetry.DecodeLogs(c.body, c.f)
		if !errors.Is(err, c.err) || err == nil && len(telemetry.Events(d)) != n {
			t.Errorf("%s: %v, want %v", name, err, c.err)
		}
	}
}

// Metric data points are bounded as records are: a gauge's, a sum's, a
// histogram's, counted together.
func TestDataPointsAreBounded(t *testing.T) {
	half := telemetry.MaxRecords / 2
	gauge := field(5, repeated(1, half))       // Metric.gauge { dataPoints… }
	histogram := field(9, repeated(1, half+1)) // Metric.histogram { dataPoints… }
	body := field(1, field(2, append(field(2, gauge), field(2, histogram)...)))
	if _, err := telemetry.DecodeMetrics(body, telemetry.Protobuf); !errors.Is(err, telemetry.ErrTooManyRecords) {
		t.Fatalf("%d data points: %v, want ErrTooManyRecords", 2*half+1, err)
	}
	js := `{"resourceMetrics":[{"scopeMetrics":[{"metrics":[{"sum":{"dataPoints":[` + jsonEmpty(half) +
		`]}},{"summary":{"dataPoints":[` + jsonEmpty(half+1) + `]}}]}]}]}`
	if _, err := telemetry.DecodeMetrics([]byte(js), telemetry.JSON); !errors.Is(err, telemetry.ErrTooManyRecords) {
		t.Fatalf("JSON: %v, want ErrTooManyRecords", err)
	}
}

// What is no record is bounded too: empty resources, or one record with
// more attributes than MaxValues, cost as much to decode.
func TestValuesAreBounded(t *testing.T) {
	attrs := repeated(6, telemetry.MaxValues) // LogRecord.attributes
	for name, body := range map[string][]byte{
		"resources":  repeated(1, telemetry.MaxValues+1),
		"attributes": logsOf(field(2, attrs)),
	} {
		if _, err := telemetry.DecodeLogs(body, telemetry.Protobuf); !errors.Is(err, telemetry.ErrTooManyRecords) {
			t.Errorf("%s: %v, want ErrTooManyRecords", name, err)
		}
	}
	js := `{"resourceLogs":[` + jsonEmpty(telemetry.MaxValues/2) + `]}` // each element and its object
	if _, err := telemetry.DecodeLogs([]byte(js), telemetry.JSON); !errors.Is(err, telemetry.ErrTooManyRecords) {
		t.Fatalf("JSON resources: %v, want ErrTooManyRecords", err)
	}
}

// A body nested past protobuf's recursion limit is malformed, not a
// stack the scan overflows; a body the JSON scan cannot follow is
// malformed, and the error quotes nothing of it.
func TestBoundScanRefusesWhatItCannotFollow(t *testing.T) {
	deep := []byte(strings.Repeat("[", 100_000))
	nested := []byte{}
	for range 20_000 { // AnyValue.kvlistValue { values { value … } }
		nested = field(6, field(1, field(2, nested)))
	}
	for name, c := range map[string]struct {
		body []byte
		f    telemetry.Format
	}{
		"deep JSON":          {deep, telemetry.JSON},
		"deep protobuf":      {logsOf(field(2, field(6, field(2, nested)))), telemetry.Protobuf},
		"unterminated":       {[]byte(`{"resourceLogs":[{"secret`), telemetry.JSON},
		"no colon":           {[]byte(`{"resourceLogs" "secret"}`), telemetry.JSON},
		"truncated protobuf": {logsOf(repeated(2, 3))[:5], telemetry.Protobuf},
	} {
		_, err := telemetry.DecodeLogs(c.body, c.f)
		if !errors.Is(err, telemetry.ErrMalformed) || strings.Contains(err.Error(), "secret") {
			t.Errorf("%s: %v, want ErrMalformed", name, err)
		}
	}
}
