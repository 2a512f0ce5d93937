package streams_test

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/spinehq/spine/streams"
)

// Batches Accept takes nothing of cost no transaction: the handler never
// sees them, no batch is committed for them, and the checkpoint is written
// once the stream is quiet; the next message the projector takes is
// applied as ever.
func TestPassedOverBatchesCostNoTransaction(t *testing.T) {
	t.Cleanup(streams.SetCheckpointEvery(time.Hour))
	r := newRig(t)
	var transactions atomic.Int64
	r.start(func(c *streams.ProjectorConfig) {
		c.BatchSize = 10
		c.Accept = func(subject string) bool { return subject == "spine.session.s-9.end" }
		c.OnTimes = func(streams.BatchTimes) { transactions.Add(1) }
	})
	seqs := r.publishN(200)
	r.waitCommitted(seqs[len(seqs)-1])
	deadline := time.Now().Add(waitTimeout)
	for r.checkpoint() != seqs[len(seqs)-1] {
		if time.Now().After(deadline) {
			t.Fatalf("the passed-over checkpoint is %d, want %d, after %v", r.checkpoint(), seqs[len(seqs)-1], waitTimeout)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if n := transactions.Load(); n != 0 || r.handler.calls.Load() != 0 {
		t.Fatalf("200 messages Accept refuses: %d batch transactions, %d handler calls; want none", n, r.handler.calls.Load())
	}
	ack, err := r.js.Publish(t.Context(), "spine.session.s-9.end", []byte("taken"))
	if err != nil {
		t.Fatal(err)
	}
	r.waitCommitted(ack.Sequence)
	r.wantSeen([]uint64{ack.Sequence})
	if got := r.checkpoint(); got != ack.Sequence || transactions.Load() != 1 {
		t.Fatalf("after a message it takes: checkpoint %d (want %d), %d transactions (want 1)", got, ack.Sequence, transactions.Load())
	}
}

// A projector stopped before it wrote what it passed over writes it as it
// stops: the checkpoint saved is the one it reported (a rebuild waits for
// it, then stops the projector).
func TestPassedOverCheckpointWrittenAtStop(t *testing.T) {
	t.Cleanup(streams.SetCheckpointEvery(time.Hour))
	r := newRig(t)
	p := r.start(func(c *streams.ProjectorConfig) {
		c.BatchSize = 10
		c.MaxWait = 3 * time.Second // no quiet moment comes before the check
		c.Accept = func(string) bool { return false }
	})
	seqs := r.publishN(50)
	r.waitCommitted(seqs[len(seqs)-1])
	if got := r.checkpoint(); got != 0 {
		t.Fatalf("checkpoint %d written before any quiet moment; the test needs it unwritten", got)
	}
	stop(t, p)
	if got := r.checkpoint(); got != seqs[len(seqs)-1] || p.Checkpoint() != got {
		t.Fatalf("after the stop: checkpoint written %d, reported %d; want %d", got, p.Checkpoint(), seqs[len(seqs)-1])
	}
}
