package server

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	collogs "go.opentelemetry.io/proto/slim/otlp/collector/logs/v1"
	colmetrics "go.opentelemetry.io/proto/slim/otlp/collector/metrics/v1"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/spinehq/spine/telemetry"
)

// How the OTLP doors answer (the OTLP/HTTP specification): a success is
// the export's response message in the request's own encoding, with a
// partial success when some records were refused; a refusal is an HTTP
// status with a google.rpc.Status body, in the request's encoding where
// it is known, else JSON.

// logsAnswer is the ExportLogsServiceResponse for res: empty when nothing
// was refused, else the count refused and why, in words.
func logsAnswer(res *telemetryResult) *collogs.ExportLogsServiceResponse {
	n := res.rejected()
	if n == 0 {
		return &collogs.ExportLogsServiceResponse{}
	}
	return &collogs.ExportLogsServiceResponse{PartialSuccess: &collogs.ExportLogsPartialSuccess{
		RejectedLogRecords: n, ErrorMessage: refusalMessage(res)}}
}

// metricsAnswer is an ExportMetricsServiceResponse: every data point is
// taken.
func metricsAnswer() *colmetrics.ExportMetricsServiceResponse {
	return &colmetrics.ExportMetricsServiceResponse{}
}

// refusalMessage says how many records were refused for each reason:
// "3 log records not recorded: 2 of an identity no org admin mapped…; 1 …".
func refusalMessage(res *telemetryResult) string {
	var parts []string
	for _, why := range slices.Sorted(maps.Keys(res.refused)) {
		parts = append(parts, fmt.Sprintf("%d %s", res.refused[why], refusalWords[why]))
	}
	return fmt.Sprintf("%d log records not recorded: %s", res.rejected(), strings.Join(parts, "; "))
}

// writeOTLP answers 200 with m in format f.
func writeOTLP(w http.ResponseWriter, f telemetry.Format, m proto.Message) {
	var b []byte
	var err error
	if f == telemetry.Protobuf {
		b, err = proto.Marshal(m)
	} else {
		b, err = protojson.Marshal(m)
	}
	if err != nil { // a response of two fields always encodes
		writeStatus(w, f, http.StatusInternalServerError, "encode the response")
		return
	}
	writeBody(w, f, http.StatusOK, b)
}

// gRPC's codes in a google.rpc.Status body, by the HTTP status spine
// answers.
var statusCodes = map[int]uint64{
	http.StatusBadRequest:            3,  // INVALID_ARGUMENT
	http.StatusRequestTimeout:        4,  // DEADLINE_EXCEEDED
	http.StatusUnsupportedMediaType:  3,  // INVALID_ARGUMENT
	http.StatusRequestEntityTooLarge: 8,  // RESOURCE_EXHAUSTED
	http.StatusTooManyRequests:       8,  // RESOURCE_EXHAUSTED
	http.StatusInternalServerError:   13, // INTERNAL
	http.StatusServiceUnavailable:    14, // UNAVAILABLE
}

// refuseIn answers status in the words r's route speaks: on an OTLP
// route a google.rpc.Status, the only refusal an exporter reads, in the
// request's encoding (JSON when its Content-Type is neither); on any
// other route spine's {"error"}. The limits in front of every route (the
// in-flight budget, the quota, the body's rate) answer through it.
func refuseIn(w http.ResponseWriter, r *http.Request, status int, code, msg string) {
	if !strings.HasPrefix(r.URL.Path, "/otlp/") {
		writeError(w, status, code, msg)
		return
	}
	f, err := telemetry.FormatOf(r.Header.Get("Content-Type"))
	if err != nil {
		f = telemetry.JSON
	}
	writeStatus(w, f, status, msg)
}

// writeStatus answers status with a google.rpc.Status {code, message}:
// protobuf (encoded here: its two fields are all spine sets) or JSON.
func writeStatus(w http.ResponseWriter, f telemetry.Format, status int, msg string) {
	code := statusCodes[status]
	if f == telemetry.Protobuf {
		b := protowire.AppendVarint(protowire.AppendTag(nil, 1, protowire.VarintType), code)
		b = protowire.AppendString(protowire.AppendTag(b, 2, protowire.BytesType), msg)
		writeBody(w, f, status, b)
		return
	}
	b, _ := json.Marshal(struct {
		Code    uint64 `json:"code"`
		Message string `json:"message"`
	}{code, msg})
	writeBody(w, f, status, b)
}

// telemetryRetryAfter is how long an exporter is asked to wait when the
// log or the database could not take its export.
const telemetryRetryAfter = 5 * time.Second

// writeUnavailable answers 503 with Retry-After: nothing of the export is
// lost by sending it again, its envelopes' ids make a copy the first.
func writeUnavailable(w http.ResponseWriter, f telemetry.Format) {
	w.Header().Set("Retry-After", strconv.Itoa(int(telemetryRetryAfter/time.Second)))
	writeStatus(w, f, http.StatusServiceUnavailable, "spine could not record the export now; send it again after Retry-After")
}

func writeBody(w http.ResponseWriter, f telemetry.Format, status int, b []byte) {
	ct := "application/json"
	if f == telemetry.Protobuf {
		ct = "application/x-protobuf"
	}
	w.Header().Set("Content-Type", ct)
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(status)
	_, _ = w.Write(b)
}
