package streams_test

import (
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/spinehq/spine/streams"
)

// TestProjectorDeliveryLost: a delivery of the projector's consumer that
// never reaches the projector (as a clustered consumer's leader loses the
// ones on their way when its server stops) is not passed over when later
// deliveries arrive: the consumer is positioned at the checkpoint again
// and every message is applied once.
//
// The lost delivery is made here by a second fetch on the consumer that
// takes one message and never acks it, while the projector is held with
// its pipeline full (one batch applying, one fetched and waiting to be
// handed on) so that it asks for nothing meanwhile.
func TestProjectorDeliveryLost(t *testing.T) {
	r := newRig(t)
	inApply, release := make(chan struct{}), make(chan struct{})
	r.handler.beforeApply = func(call int64, _ []streams.Message) {
		if call == 1 {
			close(inApply)
			<-release
		}
	}
	seqs := r.publishN(2)
	r.start(func(c *streams.ProjectorConfig) { c.BatchSize = 1 })
	select {
	case <-inApply:
	case <-time.After(waitTimeout):
		t.Fatal("the first batch never reached the handler")
	}
	// Both delivered and no pull request waiting: the projector holds one
	// batch in Apply and one it cannot hand on.
	deadline := time.Now().Add(waitTimeout)
	for info := r.consumer(); info.Delivered.Consumer != 2 || info.NumWaiting != 0; info = r.consumer() {
		if time.Now().After(deadline) {
			t.Fatalf("consumer delivered %d with %d requests waiting; want 2 and none", info.Delivered.Consumer, info.NumWaiting)
		}
		time.Sleep(10 * time.Millisecond) // the server's state has no signal to wait on
	}

	seqs = append(seqs, r.publish("stolen")...)
	cons, err := r.js.Consumer(t.Context(), streams.StreamSessions, projectorName)
	if err != nil {
		t.Fatal(err)
	}
	batch, err := cons.Fetch(1, jetstream.FetchMaxWait(waitTimeout))
	if err != nil {
		t.Fatal(err)
	}
	var stolen []jetstream.Msg
	for m := range batch.Messages() {
		stolen = append(stolen, m)
	}
	if len(stolen) != 1 {
		t.Fatalf("the second fetch took %d messages (%v), want the one published", len(stolen), batch.Error())
	}
	if md, _ := stolen[0].Metadata(); md.Sequence.Stream != seqs[2] {
		t.Fatalf("the second fetch took stream sequence %d, want %d", md.Sequence.Stream, seqs[2])
	}

	seqs = append(seqs, r.publishN(2)...)
	close(release)
	r.waitCommitted(seqs[len(seqs)-1])
	r.wantSeen(seqs)
	if got := r.handler.inserted.Load(); got != int64(len(seqs)) {
		t.Fatalf("handler inserted %d rows for %d messages", got, len(seqs))
	}
}
