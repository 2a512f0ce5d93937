package library

import "github.com/prometheus/client_golang/prometheus"

// Metrics count what the Library stores and serves.
type Metrics struct {
	bytes    *prometheus.CounterVec
	files    *prometheus.CounterVec
	corrupt  prometheus.Counter
	failures *prometheus.CounterVec
}

// NewMetrics registers the Library's metrics on reg (nil: unregistered).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		bytes: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "spine_library_bytes_total",
			Help: "Raw bytes written to (put) or served from (get) the Library."}, []string{"op"}),
		files: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "spine_library_files_total",
			Help: "Files put, by outcome: stored (new) or deduplicated (already stored)."}, []string{"outcome"}),
		corrupt: prometheus.NewCounter(prometheus.CounterOpts{Name: "spine_library_corrupt_total",
			Help: "Reads refused because stored bytes did not match their digest."}),
		failures: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "spine_library_failures_total",
			Help: "Library writes that failed; the session went on with the content marked missing."}, []string{"op"}),
	}
	if reg != nil {
		reg.MustRegister(m.bytes, m.files, m.corrupt, m.failures)
	}
	return m
}

// Failed counts a failed write that the caller survived.
func (m *Metrics) Failed(op string) { m.failures.WithLabelValues(op).Inc() }
