package streams

import (
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// Phase is one part of a projector's loop whose time it adds up: where the
// time between a message's publish and its commit goes (docs/performance.md).
type Phase int

// The phases, in the order a batch meets them.
const (
	PhaseWait        Phase = iota // waiting for the fetch goroutine's next batch
	PhaseBegin                    // BEGIN, and locking, reading and moving the checkpoint
	PhaseHandle                   // the handler's Apply
	PhaseDeadLetters              // recording the handler's rejections
	PhaseCommit                   // COMMIT: PostgreSQL's WAL flush (fsync) is here
	PhaseAck                      // acking the batch to JetStream
	numPhases
)

var phaseNames = [numPhases]string{"wait", "begin", "handle", "deadLetters", "commit", "ack"}

func (ph Phase) String() string { return phaseNames[ph] }

// phaseClock adds up the time spent in each phase since the projector was
// made; its readers (Phases) may run on any goroutine.
type phaseClock [numPhases]atomic.Int64

// since adds the time from start to now to ph and returns now, the start
// of the next phase.
func (c *phaseClock) since(ph Phase, start time.Time) time.Time {
	now := time.Now()
	c[ph].Add(int64(now.Sub(start)))
	return now
}

// Phases returns the total time the projector has spent in each phase, by
// the phase's name. Benchmarks take the difference of two readings.
func (p *Projector) Phases() map[string]time.Duration {
	out := make(map[string]time.Duration, numPhases)
	for ph := range numPhases {
		out[ph.String()] = time.Duration(p.phases[ph].Load())
	}
	return out
}

// BatchTimes is when one committed batch met each step of the loop
// (ProjectorConfig.OnTimes): Began to Handled is BEGIN, the checkpoint's
// lock and move and the handler; Handled to Committed dead letters and
// COMMIT. Before Began a message waited for the batch before it, from the
// time JetStream stored it (Message.Time).
type BatchTimes struct {
	Last      uint64 // the batch's last stream sequence
	Messages  int
	Began     time.Time
	Handled   time.Time
	Committed time.Time
}

// fetchedBatch is a batch on its way from the fetch goroutine to the loop.
type fetchedBatch struct {
	raw  []jetstream.Msg
	msgs []Message // raw converted and prepared
}
