package telemetry

import (
	"encoding/base64"
	"encoding/hex"

	logsv1 "go.opentelemetry.io/proto/slim/otlp/logs/v1"
	metricsv1 "go.opentelemetry.io/proto/slim/otlp/metrics/v1"
)

// OTLP/JSON writes trace and span ids in hex (Codex does:
// "traceId":"3318e2cb460498ef0d7e47a457cb5551"), where protojson reads
// every bytes field as base64, as exporters built on a generic protobuf
// JSON encoder write them. Hex digits are base64 digits too, so protojson
// takes a hex id without complaint and makes 24 bytes of a 16-byte trace
// id (12 of an 8-byte span id). Those lengths are impossible for a real
// id, and 32 or 16 base64 digits use every bit they carry, so encoding
// the bytes back gives the exact string sent: hexID undoes the misreading.
const (
	traceIDSize = 16
	spanIDSize  = 8
)

// hexID is id as the hex string protojson misread, or id itself.
func hexID(id []byte, size int) []byte {
	if len(id) != size*3/2 {
		return id
	}
	h, err := hex.DecodeString(base64.StdEncoding.EncodeToString(id))
	if err != nil || len(h) != size {
		return id
	}
	return h
}

// hexLogIDs repairs every log record's trace and span id.
func hexLogIDs(d *logsv1.LogsData) {
	for _, rl := range d.GetResourceLogs() {
		for _, sl := range rl.GetScopeLogs() {
			for _, lr := range sl.GetLogRecords() {
				lr.TraceId = hexID(lr.TraceId, traceIDSize)
				lr.SpanId = hexID(lr.SpanId, spanIDSize)
			}
		}
	}
}

// hexMetricIDs repairs the trace and span ids of every exemplar.
func hexMetricIDs(d *metricsv1.MetricsData) {
	for _, rm := range d.GetResourceMetrics() {
		for _, sm := range rm.GetScopeMetrics() {
			for _, m := range sm.GetMetrics() {
				for _, e := range exemplars(m) {
					e.TraceId = hexID(e.TraceId, traceIDSize)
					e.SpanId = hexID(e.SpanId, spanIDSize)
				}
			}
		}
	}
}

// exemplars are every exemplar of a metric's data points.
func exemplars(m *metricsv1.Metric) []*metricsv1.Exemplar {
	var out []*metricsv1.Exemplar
	for _, p := range m.GetGauge().GetDataPoints() {
		out = append(out, p.GetExemplars()...)
	}
	for _, p := range m.GetSum().GetDataPoints() {
		out = append(out, p.GetExemplars()...)
	}
	for _, p := range m.GetHistogram().GetDataPoints() {
		out = append(out, p.GetExemplars()...)
	}
	for _, p := range m.GetExponentialHistogram().GetDataPoints() {
		out = append(out, p.GetExemplars()...)
	}
	return out
}
