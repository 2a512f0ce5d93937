package server

import "github.com/prometheus/client_golang/prometheus"

type metrics struct {
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
	ingested *prometheus.CounterVec
	refused  *prometheus.CounterVec
	inflight prometheus.Gauge
	// telemetry counts the telemetry doors' events by door and result;
	// points the OTLP metrics' data points by app (counted, never projected).
	telemetry, points *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "spine_http_requests_total",
			Help: "HTTP requests by route pattern and status."}, []string{"route", "status"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "spine_http_request_seconds",
			Help: "HTTP request latency by route pattern.", Buckets: prometheus.DefBuckets}, []string{"route"}),
		ingested: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "spine_ingest_envelopes_total",
			Help: "Envelopes received over HTTP ingest, by type and result (accepted, duplicate, rejected)."},
			[]string{"type", "result"}),
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "spine_http_limited_total",
			Help: "Requests cut or refused by a limit, by code (body_too_slow, busy, quota_exceeded, too_many_streams)."}, []string{"code"}),
		inflight: prometheus.NewGauge(prometheus.GaugeOpts{Name: "spine_http_inflight_bytes",
			Help: "Weighted request bytes in flight, held against the in-flight budget."}),
		telemetry: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "spine_telemetry_events_total",
			Help: "The apps' telemetry events by door (otlp, hook) and result (recorded, ignored, unmapped, no_member, " +
				"no_session, unknown_app, session_taken, invalid, unavailable)."}, []string{"door", "result"}),
		points: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "spine_telemetry_metric_points_total",
			Help: "Data points of the apps' OTLP metrics, by app (claude-code, codex, other): taken, not projected."},
			[]string{"app"}),
	}
	if reg != nil {
		reg.MustRegister(m.requests, m.duration, m.ingested, m.refused, m.inflight, m.telemetry, m.points)
	}
	return m
}
