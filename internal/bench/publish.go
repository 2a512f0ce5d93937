package bench

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// stallBackoff is how long a publish that found too many acks outstanding
// waits before it tries again.
const stallBackoff = time.Millisecond

// sendFunc publishes message i asynchronously.
type sendFunc func(i int) (jetstream.PubAckFuture, error)

// publishAll sends n messages without waiting for acks in between, then
// waits for every ack and returns the stream sequence of each message.
func publishAll(ctx context.Context, n int, send sendFunc) ([]uint64, error) {
	futures := make([]jetstream.PubAckFuture, n)
	for i := range n {
		f, err := sendPatiently(ctx, i, send)
		if err != nil {
			return nil, err
		}
		futures[i] = f
	}
	return awaitAcks(ctx, futures)
}

// sendPatiently retries a send refused because too many acks are
// outstanding: a burst outruns the client's window, which is no failure.
func sendPatiently(ctx context.Context, i int, send sendFunc) (jetstream.PubAckFuture, error) {
	for {
		f, err := send(i)
		if !errors.Is(err, jetstream.ErrTooManyStalledMsgs) {
			return f, err
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(stallBackoff):
		}
	}
}

// awaitAcks waits for every future and returns the sequences. A duplicate
// is an error: every message a run sends has a fresh id.
func awaitAcks(ctx context.Context, futures []jetstream.PubAckFuture) ([]uint64, error) {
	seqs := make([]uint64, len(futures))
	for i, f := range futures {
		select {
		case ack := <-f.Ok():
			if ack.Duplicate {
				return nil, fmt.Errorf("publish message %d: stored as a duplicate", i)
			}
			seqs[i] = ack.Sequence
		case err := <-f.Err():
			return nil, fmt.Errorf("publish message %d: %w", i, err)
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return seqs, nil
}

// lastSeq is the highest sequence in seqs.
func lastSeq(seqs []uint64) uint64 {
	var last uint64
	for _, s := range seqs {
		last = max(last, s)
	}
	return last
}
