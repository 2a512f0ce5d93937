package server

import (
	"cmp"
	"errors"
	"net/http"
	"time"

	"github.com/spinehq/spine/telemetry"
)

// The telemetry doors' routes (docs/telemetry.md): OTLP/HTTP logs and
// metrics, so an exporter's OTEL_EXPORTER_OTLP_ENDPOINT is spine's URL +
// /otlp, and Claude Code's http hooks.
func (s *Server) telemetryRoutes() {
	s.mux.Handle("POST /otlp/v1/logs", s.authedTelemetry(s.withQuota(s.otlpLogs)))
	s.mux.Handle("POST /otlp/v1/metrics", s.authedTelemetry(s.withQuota(s.otlpMetrics)))
	s.mux.Handle("POST /v1/hooks/claude-code", s.authedTelemetry(s.withQuota(s.claudeCodeHook)))
}

// otlpLogs records each log record of an export that spine records
// (Translate), as the caller, and answers OTLP's ExportLogsServiceResponse:
// empty when nothing was refused, else a partial success naming how many
// records were and why. An event spine records nothing of is accepted.
func (s *Server) otlpLogs(w http.ResponseWriter, r *http.Request) {
	f, body, ok := s.otlpBody(w, r)
	if !ok {
		return
	}
	d, err := telemetry.DecodeLogs(body, f)
	if err != nil {
		refuseDecode(w, f, err)
		return
	}
	events := telemetry.Events(d)
	res := &telemetryResult{door: "otlp", events: len(events)}
	var evs []*telemetryEvent
	now := time.Now()
	for _, e := range events {
		env, err := telemetry.Translate(e, now)
		switch {
		case errors.Is(err, telemetry.ErrUnknownApp):
			res.refuse(refusedUnknownApp)
		case errors.Is(err, telemetry.ErrNoSession):
			res.refuse(refusedNoSession)
		case env == nil:
			res.ignored++
		default:
			evs = append(evs, &telemetryEvent{env: env, ids: e.Identities()})
		}
	}
	err = s.record(r.Context(), caller(r), evs, res)
	s.count(res)
	if err != nil {
		writeUnavailable(w, f)
		return
	}
	writeOTLP(w, f, logsAnswer(res))
}

// otlpMetrics takes an export of metrics and counts its data points: the
// logs carry the same numbers per request, so metrics project nothing.
// Taking them keeps the exporter from retrying.
func (s *Server) otlpMetrics(w http.ResponseWriter, r *http.Request) {
	f, body, ok := s.otlpBody(w, r)
	if !ok {
		return
	}
	d, err := telemetry.DecodeMetrics(body, f)
	if err != nil {
		refuseDecode(w, f, err)
		return
	}
	for app, n := range telemetry.Points(d) {
		s.m.points.WithLabelValues(cmp.Or(app, "other")).Add(float64(n))
	}
	writeOTLP(w, f, metricsAnswer())
}

// otlpBody reads an OTLP/HTTP body in the format its Content-Type names,
// gunzipped when it says gzip, with or without a Content-Length (Claude
// Code's are chunked), and holds its decompressed weight in the in-flight
// budget. It answers the request itself when it cannot.
func (s *Server) otlpBody(w http.ResponseWriter, r *http.Request) (telemetry.Format, []byte, bool) {
	f, err := telemetry.FormatOf(r.Header.Get("Content-Type"))
	if err != nil {
		writeStatus(w, telemetry.JSON, http.StatusUnsupportedMediaType, err.Error())
		return 0, nil, false
	}
	body, err := telemetry.ReadBody(r.Body, r.Header.Get("Content-Encoding"), &telemetry.ReadOpts{
		Reserve: func(n int64) bool { return holdDecoded(r, n) }})
	switch {
	case errors.Is(err, ErrBusy), errors.Is(err, ErrBodyTooSlow):
		return 0, nil, false // the body limiter answered
	case errors.Is(err, telemetry.ErrNoRoom):
		s.m.refused.WithLabelValues(CodeBusy).Inc()
		w.Header().Set("Connection", "close") // the rest of the body is never read, as body.go's refusals
		refuse429(w, r, CodeBusy, "spine is handling as many request bytes as it may hold; retry after the Retry-After seconds", time.Second)
		return 0, nil, false
	case errors.Is(err, telemetry.ErrEncoding):
		writeStatus(w, f, http.StatusUnsupportedMediaType, err.Error())
		return 0, nil, false
	case errors.Is(err, telemetry.ErrTooLarge):
		writeStatus(w, f, http.StatusRequestEntityTooLarge, err.Error())
		return 0, nil, false
	case err != nil:
		writeStatus(w, f, http.StatusBadRequest, "body unreadable: "+err.Error())
		return 0, nil, false
	}
	return f, body, true
}

// refuseDecode answers an export that does not decode: 413 when it holds
// more records or values than an export may (telemetry.MaxRecords), else
// 400. Neither message quotes the body.
func refuseDecode(w http.ResponseWriter, f telemetry.Format, err error) {
	if errors.Is(err, telemetry.ErrTooManyRecords) {
		writeStatus(w, f, http.StatusRequestEntityTooLarge, err.Error())
		return
	}
	writeStatus(w, f, http.StatusBadRequest, err.Error())
}
