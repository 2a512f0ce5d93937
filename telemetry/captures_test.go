package telemetry_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spinehq/spine/telemetry"
	logsv1 "go.opentelemetry.io/proto/slim/otlp/logs/v1"
	metricsv1 "go.opentelemetry.io/proto/slim/otlp/metrics/v1"
)

// captured is one request of ../testdata/otlp, as its manifest tells
// how it arrived, and its body as read by ReadBody.
type captured struct {
	posted
	body   []byte // decompressed
	format telemetry.Format
}

// captures are the requests of ../testdata/otlp whose file starts with
// prefix, in manifest order.
func captures(t *testing.T, prefix string) []captured {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(otlpDir, "requests.json"))
	if err != nil {
		t.Fatal(err)
	}
	var all []posted
	if err := json.Unmarshal(b, &all); err != nil {
		t.Fatal(err)
	}
	var out []captured
	for _, p := range all {
		if strings.HasPrefix(p.File, prefix) {
			out = append(out, readCapture(t, p))
		}
	}
	if len(out) == 0 {
		t.Fatalf("no capture named %s* in %s", prefix, otlpDir)
	}
	return out
}

// readCapture reads one capture through FormatOf and ReadBody, as a door
// would.
func readCapture(t *testing.T, p posted) captured {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(otlpDir, p.File))
	if err != nil {
		t.Fatal(err)
	}
	f, err := telemetry.FormatOf(p.ContentType)
	if err != nil {
		t.Fatalf("%s: %v", p.File, err)
	}
	body, err := telemetry.ReadBody(bytes.NewReader(raw), p.ContentEncoding, nil)
	if err != nil {
		t.Fatalf("%s: %v", p.File, err)
	}
	return captured{posted: p, body: body, format: f}
}

func (c captured) signal() string { return strings.TrimPrefix(c.Path, "/otlp/v1/") }

// logs decodes every logs capture of prefix.
func logs(t *testing.T, prefix string) []*logsv1.LogsData {
	t.Helper()
	var out []*logsv1.LogsData
	for _, c := range captures(t, prefix) {
		if c.signal() != "logs" {
			continue
		}
		d, err := telemetry.DecodeLogs(c.body, c.format)
		if err != nil {
			t.Fatalf("%s: %v", c.File, err)
		}
		out = append(out, d)
	}
	return out
}

// events are the events of every logs capture of prefix, in order.
func events(t *testing.T, prefix string) []telemetry.Event {
	t.Helper()
	var out []telemetry.Event
	for _, d := range logs(t, prefix) {
		out = append(out, telemetry.Events(d)...)
	}
	return out
}

// metrics decodes every metrics capture of prefix.
func metrics(t *testing.T, prefix string) []*metricsv1.MetricsData {
	t.Helper()
	var out []*metricsv1.MetricsData
	for _, c := range captures(t, prefix) {
		if c.signal() != "metrics" {
			continue
		}
		d, err := telemetry.DecodeMetrics(c.body, c.format)
		if err != nil {
			t.Fatalf("%s: %v", c.File, err)
		}
		out = append(out, d)
	}
	return out
}

// named are the events called name.
func named(evs []telemetry.Event, name string) []telemetry.Event {
	var out []telemetry.Event
	for _, e := range evs {
		if e.Name == name {
			out = append(out, e)
		}
	}
	return out
}
