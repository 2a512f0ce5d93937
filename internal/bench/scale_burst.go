package bench

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/spinehq/spine/streams"
)

// ScaleBurst is each instance's part in spine's first burst, so that the
// gain of more instances can be read off a machine with cores enough for
// them; on fewer cores, see the Scale's note and CPU.
type ScaleBurst struct {
	Seconds         float64         `json:"seconds"`      // first publish → last commit, as spine.seconds
	ChunksPerSecond float64         `json:"chunksPerSec"` // the whole run's, as spine.chunksPerSec
	Instances       []InstanceBurst `json:"instances"`
	// SumChunksPerBusySecond adds up the instances' ChunksPerBusySecond,
	// as if none shared the cores, NATS or PostgreSQL with another: more
	// than the cores gave when they did (ChunksPerSecond), and no forecast
	// for as many machines on one PostgreSQL (see sharedCoresNote).
	SumChunksPerBusySecond float64 `json:"sumChunksPerBusySec"`
	CPU                    CPU     `json:"cpu"`
}

// InstanceBurst is what one instance's recorder did in the burst.
type InstanceBurst struct {
	Partitions []int `json:"partitions,omitempty"` // the recorder partitions it led (partitioned runs)
	Envelopes  int64 `json:"envelopes"`            // committed by its recorder projectors
	Chunks     int64 `json:"chunks"`
	Batches    int64 `json:"batches"`
	// BusySeconds adds up its recorder loops' time outside waiting for a
	// fetch (every streams.Phase but wait): BEGIN, the handler, the
	// checkpoint, COMMIT and the ack, PostgreSQL's round trips and fsyncs
	// included, and any time a loop was ready but had no core.
	BusySeconds float64 `json:"busySeconds"`
	// BusiestLoopSeconds is the busy time of its busiest loop: its loops
	// (one per partition led) run side by side, so with cores of its own
	// the instance is done when that one is.
	BusiestLoopSeconds float64 `json:"busiestLoopSeconds"`
	ChunksPerSecond    float64 `json:"chunksPerSec"` // Chunks ÷ the burst's seconds: its share of the whole run's
	// ChunksPerBusySecond is Chunks ÷ BusiestLoopSeconds: what the
	// instance commits per second while it has work, the rate it would
	// give with cores of its own if PostgreSQL kept up.
	ChunksPerBusySecond float64 `json:"chunksPerBusySec"`
}

// burstMark is what a burst's figures are measured from: each instance's
// counts and recorder loops' busy time at its start.
type burstMark struct {
	counts []counted
	busy   []map[*streams.Projector]time.Duration
}

func (tb *testbed) markBurst() burstMark {
	var m burstMark
	for _, in := range tb.instances {
		m.counts = append(m.counts, in.counted())
		m.busy = append(m.busy, in.recorderBusy())
	}
	return m
}

// burstSince is each instance's part of spine's burst t since mark.
func (tb *testbed) burstSince(mark burstMark, t Throughput) *ScaleBurst {
	b := &ScaleBurst{Seconds: t.Seconds, ChunksPerSecond: t.ChunksPerSecond, CPU: t.CPU} // the burst's own (runSpine)
	for i, in := range tb.instances {
		now := in.counted()
		ib := InstanceBurst{Partitions: in.node.LeadingPartitions(), Envelopes: now.envelopes - mark.counts[i].envelopes,
			Chunks: now.chunks - mark.counts[i].chunks, Batches: now.batches - mark.counts[i].batches}
		slices.Sort(ib.Partitions)
		var sum, busiest time.Duration
		for p, d := range in.recorderBusy() {
			d -= mark.busy[i][p] // a loop started since (a partition taken over) counts from zero
			sum, busiest = sum+d, max(busiest, d)
		}
		ib.BusySeconds, ib.BusiestLoopSeconds = round(sum.Seconds()), round(busiest.Seconds())
		if t.Seconds > 0 {
			ib.ChunksPerSecond = round(float64(ib.Chunks) / t.Seconds)
		}
		if busiest > 0 {
			ib.ChunksPerBusySecond = round(float64(ib.Chunks) / busiest.Seconds())
		}
		b.SumChunksPerBusySecond = round(b.SumChunksPerBusySecond + ib.ChunksPerBusySecond)
		b.Instances = append(b.Instances, ib)
	}
	return b
}

// counted is what the instance's recorder projectors have committed.
func (in *instance) counted() counted {
	return counted{envelopes: in.envelopes.Load(), chunks: in.chunks.Load(), batches: in.batches.Load()}
}

// recorderBusy is each of the instance's recorder loops' busy time so far.
func (in *instance) recorderBusy() map[*streams.Projector]time.Duration {
	out := map[*streams.Projector]time.Duration{}
	for _, p := range in.node.Projectors() {
		if !isRecorder(p) {
			continue
		}
		for ph, d := range p.Phases() {
			if ph != streams.PhaseWait.String() {
				out[p] += d
			}
		}
	}
	return out
}

// spreadTimeout bounds waitSpread: a hand-over takes about a second
// (node/partitions.go), and at most MaxInstances-1 of them are needed by
// one instance.
const spreadTimeout = time.Minute

// waitSpread waits until every recorder partition is led and no instance
// leads more than its fair share, so a burst is not measured across
// hand-overs: the first instance takes every partition and hands them over
// one at a time as the others join.
func (tb *testbed) waitSpread(ctx context.Context) error {
	share := (tb.partitions + len(tb.instances) - 1) / len(tb.instances)
	deadline := time.Now().Add(spreadTimeout)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		led, most := 0, 0
		for _, in := range tb.instances {
			n := len(in.node.LeadingPartitions())
			led, most = led+n, max(most, n)
		}
		if led == tb.partitions && most <= share {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%w: %d of %d partitions led, at most %d by one instance (share %d), after %s",
				ErrStalled, led, tb.partitions, most, share, spreadTimeout)
		}
		select {
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-tick.C:
		}
	}
}
