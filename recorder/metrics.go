package recorder

import "github.com/prometheus/client_golang/prometheus"

type metrics struct {
	envelopes *prometheus.CounterVec
	dropped   *prometheus.CounterVec
	holes     prometheus.Counter
	ended     *prometheus.CounterVec

	libraryFailures prometheus.Counter
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		envelopes: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "spine_recorder_envelopes_total",
			Help: "Envelopes the recorder projected, by type and outcome (applied, duplicate, dead_letter)."},
			[]string{"type", "outcome"}),
		dropped: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "spine_recorder_chunks_dropped_total",
			Help: "Chunks dropped silently because their seq repeated the session's last (duplicate); an out-of-order one is dead-lettered."},
			[]string{"reason"}),
		holes: prometheus.NewCounter(prometheus.CounterOpts{Name: "spine_recorder_dropped_actions_total",
			Help: "Chunk sequence numbers missing from recordings (holes), summed over sessions."}),
		ended: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "spine_recorder_sessions_ended_total",
			Help: "Sessions ended, by app and status."}, []string{"app", "status"}),
		libraryFailures: prometheus.NewCounter(prometheus.CounterOpts{Name: "spine_recorder_library_failures_total",
			Help: "Batches whose file contents the Library could not store; their steps say contentMissing."}),
	}
	if reg != nil {
		reg.MustRegister(m.envelopes, m.dropped, m.holes, m.ended, m.libraryFailures)
	}
	return m
}
