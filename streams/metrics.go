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
}

// NewMetrics registers the projector metrics on reg (nil: not registered,
// which tests use).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		lag: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "spine_projector_lag",
			Help: "Messages in the stream not yet applied by the projector (stream sequence minus checkpoint)."}, []string{"projector"}),
		checkpoint: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "spine_projector_checkpoint",
			Help: "Last stream sequence the projector committed."}, []string{"projector"}),
		batchSize: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "spine_projector_batch_size",
			Help: "Messages per projected batch.", Buckets: prometheus.ExponentialBuckets(1, 2, 12)}, []string{"projector"}),
		batchTime: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "spine_projector_batch_seconds",
			Help: "Time to apply and commit one batch.", Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16)}, []string{"projector"}),
		deadLetters: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "spine_projector_dead_letters_total",
			Help: "Messages dead-lettered, by reason."}, []string{"projector", "reason"}),
		retries: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "spine_projector_retries_total",
			Help: "Batches retried after a database or log failure."}, []string{"projector"}),
		applied: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "spine_projector_messages_total",
			Help: "Messages applied (including dead-lettered ones)."}, []string{"projector"}),
		skipped: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "spine_projector_redelivered_skipped_total",
			Help: "Redelivered messages at or below the checkpoint, skipped."}, []string{"projector"}),
	}
	if reg != nil {
		reg.MustRegister(m.lag, m.checkpoint, m.batchSize, m.batchTime, m.deadLetters, m.retries, m.applied, m.skipped)
	}
	return m
}
