package bench

import (
	"cmp"
	"fmt"
	"io"
	"log/slog"
	"time"
)

// Defaults for Config's zero values.
const (
	DefaultSessions        = 20
	DefaultChunks          = 500
	DefaultPayload         = 256
	DefaultRate            = 2000
	DefaultLatencyDuration = 5 * time.Second
	DefaultBatch           = 500
	DefaultEvents          = 0.1
)

// NoEvents, as Config.Events, sends only stdout chunks.
const NoEvents = -1.0

// NoLatency, as Config.LatencyDuration, skips the latency phase.
const NoLatency = time.Duration(-1)

// Config says what one ingest benchmark sends.
type Config struct {
	// Sessions is the number of sessions in each phase; 0 means 20.
	Sessions int
	// Chunks is the number of chunks per session in the throughput phases;
	// 0 means 500.
	Chunks int
	// Payload is the bytes of text per chunk (stdout text, or a command
	// event's output); 0 means 256.
	Payload int
	// Rate is the chunks per second offered in the latency phase; 0 means 2000.
	Rate int
	// LatencyDuration is how long the latency phase offers chunks; 0 means
	// 5s and NoLatency (any negative value) skips the phase.
	LatencyDuration time.Duration
	// Batch is the projector's batch size; 0 means 500. The raw path's
	// fetch size is its own (rawTuned).
	Batch int
	// Events is the fraction of chunks that are command events; 0 means
	// 0.1 and NoEvents (any negative value) means none.
	Events float64
	// DatabaseURL is a PostgreSQL whose user may CREATE DATABASE; "" means
	// the server `spine serve` would find (a local one, else a private
	// cluster started for the run).
	DatabaseURL string
	// Logger receives progress; nil discards it.
	Logger *slog.Logger
	// Instances is the number of spine nodes sharing the database and the
	// log, each running every projector (one leads, see ScaleNote), with
	// sessions published through them in turn; 0 means 1.
	Instances int
	// Cluster runs the log on three in-process nats-servers with spine's
	// streams and the raw baseline's at replicas 3.
	Cluster bool
	// Duration, when positive, makes the run a soak instead of the burst
	// and latency phases: chunks offered at Rate for Duration, sessions of
	// Chunks chunks each ending and being replaced, resident memory sampled
	// throughout (see Soak).
	Duration time.Duration
	// DuplicateWindow, when positive, replaces spine's window on
	// SPINE_SESSIONS (streams.DuplicateWindow) after start: JetStream keeps
	// every message id for the window, in memory, so a soak shorter than
	// the window sees that memory grow. A what-if, not spine as shipped.
	DuplicateWindow time.Duration
	// Partitions splits the recorder's work by session id among the
	// instances (SPINE_PARTITIONS); 0 or 1 means unpartitioned.
	Partitions int
	// OrgBytesPerSec and OrgEnvelopesPerSec are the nodes' ingest quotas
	// per org; 0 means spine's defaults, negative none.
	OrgBytesPerSec     float64
	OrgEnvelopesPerSec float64
	// BurstProfile, when set, receives a CPU profile of spine's first
	// burst alone (publish → last commit: the whole process over that
	// time, every instance and nats-server in it), without the start,
	// raw's burst or the latency phase; nothing else in the process may be
	// profiling, and a soak (Duration) has no burst.
	BurstProfile io.Writer
	// HeapProfile, when set, receives a soak's heap profile, taken after a
	// GC once its last chunk is committed; only with Duration.
	HeapProfile io.Writer
}

// MaxInstances bounds Config.Instances.
const MaxInstances = 16

func (c Config) withDefaults() (Config, error) {
	c.Sessions = cmp.Or(c.Sessions, DefaultSessions)
	c.Chunks = cmp.Or(c.Chunks, DefaultChunks)
	c.Payload = cmp.Or(c.Payload, DefaultPayload)
	c.Rate = cmp.Or(c.Rate, DefaultRate)
	c.LatencyDuration = max(cmp.Or(c.LatencyDuration, DefaultLatencyDuration), 0)
	c.Batch = cmp.Or(c.Batch, DefaultBatch)
	c.Events = max(cmp.Or(c.Events, DefaultEvents), 0)
	c.Instances = cmp.Or(c.Instances, 1)
	if c.Logger == nil {
		c.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return c, c.validate()
}

func (c Config) validate() error {
	switch {
	case c.Sessions < 1 || c.Sessions > 9999:
		return fmt.Errorf("%w: sessions %d, want 1..9999", ErrInvalidConfig, c.Sessions)
	case c.Chunks < 1:
		return fmt.Errorf("%w: chunks %d, want 1 or more", ErrInvalidConfig, c.Chunks)
	case c.Payload < 1 || c.Payload > 1<<20:
		return fmt.Errorf("%w: payload %d, want 1..%d bytes", ErrInvalidConfig, c.Payload, 1<<20)
	case c.Rate < 1:
		return fmt.Errorf("%w: rate %d, want 1 or more chunks/s", ErrInvalidConfig, c.Rate)
	case c.Batch < 1:
		return fmt.Errorf("%w: batch %d, want 1 or more", ErrInvalidConfig, c.Batch)
	case c.Events > 1:
		return fmt.Errorf("%w: events %g, want a fraction 0..1", ErrInvalidConfig, c.Events)
	case c.Partitions > 1 && c.Duration > 0:
		return fmt.Errorf("%w: --partitions with --duration is not supported yet", ErrInvalidConfig)
	case c.Partitions < 0 || c.Partitions > 64:
		return fmt.Errorf("%w: partitions %d, want 1..64", ErrInvalidConfig, c.Partitions)
	case c.Instances < 1 || c.Instances > MaxInstances:
		return fmt.Errorf("%w: instances %d, want 1..%d", ErrInvalidConfig, c.Instances, MaxInstances)
	case c.DuplicateWindow < 0:
		return fmt.Errorf("%w: duplicate window %s, want 0 (spine's) or more", ErrInvalidConfig, c.DuplicateWindow)
	case c.Duration < 0:
		return fmt.Errorf("%w: duration %s, want 0 (no soak) or more", ErrInvalidConfig, c.Duration)
	case c.BurstProfile != nil && c.Duration > 0:
		return fmt.Errorf("%w: a burst profile with a soak, which has no burst", ErrInvalidConfig)
	case c.HeapProfile != nil && c.Duration == 0:
		return fmt.Errorf("%w: a heap profile without a soak, whose end it is taken at", ErrInvalidConfig)
	}
	return nil
}
