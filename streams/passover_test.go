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
