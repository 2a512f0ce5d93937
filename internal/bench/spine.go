package bench

import (
	"context"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// runSpine publishes the burst through spine's publisher (validate, encode,
// publish with the envelope id as Nats-Msg-Id) and times it until the
// recorder has committed the last message: published → committed and
// readable. Sessions are dealt to the instances in turn.
func runSpine(ctx context.Context, tb *testbed, b *burst) (Throughput, error) {
	r := tb.router()
	batches := tb.commits.batchCount()
	phases := tb.recorderPhases()
	mark := readCPU()
	start := time.Now()
	seqs, err := publishAll(ctx, len(b.envs), func(i int) (jetstream.PubAckFuture, error) {
		return r.publish(b.envs[i])
	})
	if err != nil {
		return Throughput{}, fmt.Errorf("spine publish: %w", err)
	}
	published := time.Since(start)
	done, err := tb.commits.waitFor(ctx, lastSeq(seqs))
	if err != nil {
		return Throughput{}, fmt.Errorf("spine commit: %w", err)
	}
	t := newThroughput(b.counts, published, done.Sub(start), tb.commits.batchCount()-batches).withCPU(cpuSince(mark))
	t.PhaseSeconds = phaseSeconds(phases, tb.recorderPhases())
	return t, nil
}
