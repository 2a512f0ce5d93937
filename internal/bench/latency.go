package bench

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/spinehq/spine/streams"
)

// minTick is the shortest pacing interval: finer ticks cost more than they
// smooth. At higher rates each tick publishes what has fallen due.
const minTick = time.Millisecond

// runLatency offers chunks of fresh sessions at cfg.Rate for
// cfg.LatencyDuration and measures each chunk from publish to commit. The
// sessions start before the clock and end after it. It returns what it sent,
// for verification.
func runLatency(ctx context.Context, tb *testbed, w *workload, cfg Config) (Latency, counts, error) {
	ids := make([]string, cfg.Sessions)
	for i := range ids {
		ids[i] = w.sessionID("l", i+1)
	}
	var sent counts
	r := tb.router()
	if err := sendAndWait(ctx, tb, r, ids, w.start, &sent); err != nil {
		return Latency{}, sent, fmt.Errorf("latency starts: %w", err)
	}
	tb.commits.recordTimes(true)
	defer tb.commits.recordTimes(false)
	phases := tb.recorderPhases()
	gcBefore := readGC()
	walBefore, walErr := readWAL(ctx, tb.node.Pool)
	o, err := offer(ctx, r.publish, w, ids, cfg.Rate, cfg.LatencyDuration, ackBacklog)
	if err != nil {
		return Latency{}, sent, fmt.Errorf("latency chunks: %w", err)
	}
	sent = sent.plus(o.sent)
	// The chunks are committed before the ends are sent: an end renders its
	// session's transcript, which the last chunks would otherwise wait for
	// in the same batch.
	if _, err := tb.commits.waitFor(ctx, lastSeq(o.seqs)); err != nil {
		return Latency{}, sent, fmt.Errorf("latency chunks: %w", err)
	}
	// The loop's phases and batches, the collector's and the WAL's figures
	// are the chunks', read before the ends.
	batches := tb.commits.batchTimes()
	phaseSecs := phaseSeconds(phases, tb.recorderPhases())
	gc := readGC().since(gcBefore)
	var wal *WALStats
	var walNote string
	walAfter, err := readWAL(ctx, tb.node.Pool)
	if err = cmp.Or(walErr, err); err == nil {
		wal = walAfter.since(walBefore)
	} else {
		walNote = "no WAL figures: " + err.Error()
	}
	if err := sendAndWait(ctx, tb, r, ids, w.end, &sent); err != nil {
		return Latency{}, sent, fmt.Errorf("latency ends: %w", err)
	}
	lat, seqs, err := o.latencies(tb.commits)
	if err != nil {
		return Latency{}, sent, err
	}
	l := summarize(lat, cfg.Rate, o.elapsed)
	var bd Breakdown
	if tb.partitions > 1 {
		bd.Note = joinNotes("partitioned: batches carry partition sequences, so chunks are not split by part", walNote)
	} else {
		bd = breakdown(o.publishedAt, seqs, batches, tb.commits.storedAt)
		bd.Note = joinNotes(bd.Note, walNote)
	}
	bd.PhaseSeconds, bd.GC, bd.WAL = phaseSecs, gc, wal
	l.Breakdown = &bd
	return l, sent, nil
}

// joinNotes joins the notes that say something.
func joinNotes(notes ...string) string {
	return strings.Join(slices.DeleteFunc(notes, func(n string) bool { return n == "" }), "; ")
}

// sendAndWait publishes one envelope per session and waits until the
// recorder has committed them all.
func sendAndWait(ctx context.Context, tb *testbed, r *router, ids []string, build func(string, time.Time) *streams.Envelope, sent *counts) error {
	now := time.Now()
	envs := make([]*streams.Envelope, len(ids))
	for i, id := range ids {
		envs[i] = build(id, now)
	}
	b, err := newBurst(envs)
	if err != nil {
		return err
	}
	*sent = sent.plus(b.counts)
	seqs, err := publishAll(ctx, len(envs), func(i int) (jetstream.PubAckFuture, error) {
		return r.publish(envs[i])
	})
	if err != nil {
		return err
	}
	_, err = tb.commits.waitFor(ctx, lastSeq(seqs))
	return err
}

// offered is the latency phase's chunks: when each was published (since
// start) and the stream sequence its ack gave it, in publish order. It
// keeps nothing else of a chunk (the envelope and its ack's future are let
// go once the ack is read) and nothing the garbage collector must scan: 16
// bytes a chunk here, and its commit and stored times in commits' maps.
type offered struct {
	start   time.Time
	at      []time.Duration
	seqs    []uint64
	sent    counts        // bytes are not counted: encoding twice would cost the phase
	elapsed time.Duration // first publish to last
}

// pendingChunk is a published chunk whose ack the resolver has not read.
type pendingChunk struct {
	f jetstream.PubAckFuture
	i int
}

// offer publishes rate chunks a second for d, round-robin over the
// sessions, paced by a ticker: on each tick it publishes the chunks that
// have fallen due since the phase began, so the offered rate holds even
// when a tick comes late. A second goroutine reads the acks in publish
// order as they come, backlog of them at most waiting for it.
func offer(ctx context.Context, pub func(*streams.Envelope) (jetstream.PubAckFuture, error), w *workload, ids []string, rate int, d time.Duration, backlog int) (*offered, error) {
	total := int(float64(rate) * d.Seconds())
	o := &offered{at: make([]time.Duration, 0, total), seqs: make([]uint64, total)}
	runCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	acks := make(chan pendingChunk, backlog)
	resolved := make(chan error, 1)
	go func() {
		err := o.resolve(runCtx, acks)
		if err != nil {
			cancel(fmt.Errorf("latency acks: %w", err))
		}
		resolved <- err
	}()
	if err := o.publishAll(runCtx, pub, w, ids, rate, total, acks); err != nil {
		cancel(err)
	}
	close(acks)
	<-resolved
	if err := context.Cause(runCtx); err != nil {
		return nil, err
	}
	return o, nil
}

// publishAll paces the chunks and hands each one's future to the resolver.
func (o *offered) publishAll(ctx context.Context, pub func(*streams.Envelope) (jetstream.PubAckFuture, error), w *workload, ids []string, rate, total int, acks chan<- pendingChunk) error {
	ticker := time.NewTicker(max(time.Second/time.Duration(rate), minTick))
	defer ticker.Stop()
	seqs := make([]int64, len(ids))
	o.start = time.Now()
	for len(o.at) < total {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-ticker.C:
		}
		due := min(total, int(time.Since(o.start).Seconds()*float64(rate)))
		for len(o.at) < due {
			if err := o.publish(ctx, pub, w, ids, seqs, acks); err != nil {
				return err
			}
		}
	}
	o.elapsed = time.Since(o.start)
	return nil
}

// publishedAt is when chunk i was published.
func (o *offered) publishedAt(i int) time.Time { return o.start.Add(o.at[i]) }

// publish sends the next chunk: session i mod n, its next seq.
func (o *offered) publish(ctx context.Context, pub func(*streams.Envelope) (jetstream.PubAckFuture, error), w *workload, ids []string, seqs []int64, acks chan<- pendingChunk) error {
	n := len(o.at)
	i := n % len(ids)
	seqs[i]++
	now := time.Now()
	e := w.chunk(ids[i], seqs[i], now)
	f, err := sendPatiently(ctx, 0, func(int) (jetstream.PubAckFuture, error) { return pub(e) })
	if err != nil {
		return err
	}
	o.sent.add(e, 0)
	o.at = append(o.at, now.Sub(o.start))
	select {
	case acks <- pendingChunk{f: f, i: n}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// resolve reads the acks in publish order and keeps each chunk's stream
// sequence. A duplicate is an error: every chunk a run sends has a fresh id.
func (o *offered) resolve(ctx context.Context, acks <-chan pendingChunk) error {
	for p := range acks {
		select {
		case ack := <-p.f.Ok():
			if ack.Duplicate {
				return fmt.Errorf("publish chunk %d: stored as a duplicate", p.i)
			}
			o.seqs[p.i] = ack.Sequence
		case err := <-p.f.Err():
			return fmt.Errorf("publish chunk %d: %w", p.i, err)
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
	return nil
}

// latencies pairs each chunk's publish time with its commit time. Every
// chunk must already be committed.
func (o *offered) latencies(c *commits) ([]time.Duration, []uint64, error) {
	seqs := o.seqs[:len(o.at)]
	out := make([]time.Duration, len(seqs))
	for i, seq := range seqs {
		at := c.committedAt(seq)
		if at.IsZero() {
			return nil, nil, fmt.Errorf("latency: sequence %d has no commit time", seq)
		}
		out[i] = at.Sub(o.publishedAt(i))
	}
	return out, seqs, nil
}

// summarize reports nearest-rank percentiles in milliseconds.
func summarize(lat []time.Duration, rate int, elapsed time.Duration) Latency {
	l := Latency{OfferedRate: rate, Seconds: round(elapsed.Seconds()), Chunks: len(lat)}
	if len(lat) == 0 {
		return l
	}
	slices.Sort(lat)
	l.AchievedRate = round(float64(len(lat)) / elapsed.Seconds())
	l.P50Ms, l.P90Ms = ms(percentile(lat, 0.50)), ms(percentile(lat, 0.90))
	l.P99Ms, l.MaxMs = ms(percentile(lat, 0.99)), ms(lat[len(lat)-1])
	return l
}

// percentile is the nearest-rank q-quantile of sorted durations.
func percentile(sorted []time.Duration, q float64) time.Duration {
	rank := int(math.Ceil(q*float64(len(sorted)))) - 1
	return sorted[min(max(rank, 0), len(sorted)-1)]
}

func ms(d time.Duration) float64 { return round(float64(d) / float64(time.Millisecond)) }
