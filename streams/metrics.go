package streams

import "github.com/prometheus/client_golang/prometheus"

// Metrics are the projector runtime's Prometheus metrics. One value serves
// every projector in a process; the projector name is a label.
type Metrics struct {
	lag         *prometheus.GaugeVec
	checkpoint  *prometheus.GaugeVec
	batchSize   *prometheus.HistogramVec
	batchTime   *prometheus.HistogramVec
	deadLetters *prometheus.CounterVec
	retries     *prometheus.CounterVec
	applied     *prometheus.CounterVec
	skipped     *prometheus.CounterVec
	isolated    *prometheus.CounterVec
	failures    *prometheus.GaugeVec
}

// NewMetrics registers the projector metrics on reg (nil: not registered,
// which tests use).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		lag: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "spine_projector_lag",
			Help: "Messages not yet applied: the stream's last sequence minus the checkpoint (for a consumer with filter subjects, its pending plus unacked messages), measured from the log."}, []string{"projector"}),
		checkpoint: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "spine_projector_checkpoint",
			Help: "Last stream sequence the projector committed."}, []string{"projector"}),
		batchSize: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "spine_projector_batch_size",
			Help: "Messages per projected batch.", Buckets: prometheus.ExponentialBuckets(1, 2, 12)}, []string{"projector"}),
		batchTime: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "spine_projector_batch_seconds",
			Help: "Time to apply and commit one batch.", Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16)}, []string{"projector"}),
		deadLetters: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "spine_projector_dead_letters_total",
			Help: "Messages dead-lettered, by reason."}, []string{"projector", "reason"}),
		retries: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "spine_projector_retries_total",
			Help: "Failed attempts to apply a batch or one isolated message, each followed by a retry."}, []string{"projector"}),
		applied: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "spine_projector_messages_total",
			Help: "Messages applied (including dead-lettered ones)."}, []string{"projector"}),
		skipped: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "spine_projector_redelivered_skipped_total",
			Help: "Redelivered messages at or below the checkpoint, skipped."}, []string{"projector"}),
		isolated: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "spine_projector_isolated_total",
			Help: "Messages that kept failing alone and were dead-lettered so the projector could go on."}, []string{"projector"}),
		failures: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "spine_projector_consecutive_failures",
			Help: "Failed attempts in a row since the projector last committed or isolated a message (0 while it advances)."}, []string{"projector"}),
	}
	if reg != nil {
		reg.MustRegister(m.lag, m.checkpoint, m.batchSize, m.batchTime, m.deadLetters, m.retries, m.applied, m.skipped,
			m.isolated, m.failures)
	}
	return m
}
