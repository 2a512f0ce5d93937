package bench

import (
	"context"
	"fmt"
	"runtime"
	"runtime/metrics"
	"runtime/pprof"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/spinehq/spine/streams"
)

// Soak is chunks offered at a fixed rate for a long time: latency over the
// whole soak, and the process's memory sampled as it goes. The process is
// all of spine: every instance, the nats-server(s) and the PostgreSQL
// clients (PostgreSQL itself runs apart).
type Soak struct {
	OfferedRate  int     `json:"offeredRate"`
	AchievedRate float64 `json:"achievedRate"` // chunks published ÷ seconds spent publishing
	Seconds      float64 `json:"seconds"`      // first publish to last
	Chunks       int     `json:"chunks"`       // each measured publish → committed
	Sessions     int     `json:"sessions"`     // started and ended during the soak
	Messages     int     `json:"messages"`     // chunks, starts and ends
	// Percentiles over every chunk of the soak, from a histogram with 1%
	// buckets (each figure is its bucket's upper edge); the maximum is exact.
	P50Ms float64 `json:"p50Ms"`
	P90Ms float64 `json:"p90Ms"`
	P99Ms float64 `json:"p99Ms"`
	MaxMs float64 `json:"maxMs"`
	// SampleSeconds is the interval between memory samples.
	SampleSeconds float64        `json:"sampleSeconds"`
	Memory        []MemorySample `json:"memory"`
	MemoryGrowth  MemoryGrowth   `json:"memoryGrowth"`
}

// MemorySample is the process at one moment of the soak.
type MemorySample struct {
	T         float64 `json:"t"`         // seconds since the first publish
	RSSBytes  int64   `json:"rssBytes"`  // VmRSS
	HeapBytes int64   `json:"heapBytes"` // live and not yet swept Go heap objects
	// ChunksCommitted is how many of the soak's chunks the recorder has
	// committed so far.
	ChunksCommitted int64 `json:"chunksCommitted"`
	// P99Ms is the p99 latency of the chunks committed since the previous
	// sample (0 when none were).
	P99Ms float64 `json:"p99Ms"`
}

// MemoryGrowth compares the last quarter of the samples with the first.
type MemoryGrowth struct {
	Bytes                 int64   `json:"bytes"`   // last-quartile mean RSS − first-quartile mean RSS
	Percent               float64 `json:"percent"` // Bytes over the first-quartile mean
	FirstQuartileRSSBytes int64   `json:"firstQuartileRssBytes"`
	LastQuartileRSSBytes  int64   `json:"lastQuartileRssBytes"`
	HeapBytes             int64   `json:"heapBytes"` // the same difference of the heap
}

// Sampling: every few seconds, and at least ten samples in a short soak.
const (
	maxSampleEvery = 5 * time.Second
	minSampleEvery = 100 * time.Millisecond
	ackBacklog     = 1 << 16 // publishes whose acks the resolver has not read yet
)

// chunkSuffix ends every chunk's subject (streams.SessionSubject).
var chunkSuffix = "." + strings.TrimPrefix(streams.TypeSessionChunk, "session.")

// runSoak offers cfg.Rate chunks a second for cfg.Duration over
// cfg.Sessions concurrent sessions; a session that has sent cfg.Chunks
// chunks ends and a fresh one takes its place at its next turn. Sessions
// are dealt to the instances in turn. It waits until the recorder has
// committed everything, and returns what it sent for verification.
func runSoak(ctx context.Context, tb *testbed, w *workload, cfg Config) (*Soak, counts, error) {
	track := newSoakTracker()
	tb.commits.setTap(track.commit)
	defer tb.commits.setTap(nil)
	s := &soaker{tb: tb, w: w, cfg: cfg, track: track, slots: make([]soakSlot, cfg.Sessions),
		acks: make(chan pendingAck, ackBacklog)}
	runCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	resolved := make(chan uint64, 1)
	go func() {
		last, err := s.resolve(runCtx)
		if err != nil {
			cancel(err)
		}
		resolved <- last
	}()
	every := min(max(cfg.Duration/10, minSampleEvery), maxSampleEvery)
	samples, elapsed, err := s.offer(runCtx, every)
	if err != nil {
		cancel(err)
	}
	close(s.acks)
	last := <-resolved
	if err == nil {
		err = context.Cause(runCtx)
	}
	if err != nil {
		return nil, s.sent, fmt.Errorf("soak: %w", err)
	}
	if _, err := tb.commits.waitFor(ctx, last); err != nil {
		return nil, s.sent, fmt.Errorf("soak commit: %w", err)
	}
	if cfg.HeapProfile != nil {
		// Once the last chunk is committed (its latency not the GC's), the
		// duplicate window still full: the drain takes well under its 2 min.
		runtime.GC()
		if err := pprof.Lookup("heap").WriteTo(cfg.HeapProfile, 0); err != nil {
			return nil, s.sent, fmt.Errorf("heap profile: %w", err)
		}
	}
	return track.summary(cfg.Rate, elapsed, s, samples, every)
}

// soakSlot is one of the concurrent sessions: its id ("" between
// sessions), the last seq sent and the instance it goes through.
type soakSlot struct {
	id       string
	seq      int64
	instance int
}

type pendingAck struct {
	f     jetstream.PubAckFuture
	at    time.Time
	chunk bool
}

// soaker publishes the soak and reads its acks.
type soaker struct {
	tb      *testbed
	w       *workload
	cfg     Config
	track   *soakTracker
	acks    chan pendingAck
	slots   []soakSlot
	started int // sessions started
	chunks  int // chunks published
	sent    counts
}

// offer paces the chunks like the latency phase (each tick publishes what
// has fallen due since the start) and samples memory every sampleEvery,
// then ends the sessions still open.
func (s *soaker) offer(ctx context.Context, sampleEvery time.Duration) ([]MemorySample, time.Duration, error) {
	total := int(float64(s.cfg.Rate) * s.cfg.Duration.Seconds())
	ticker := time.NewTicker(max(time.Second/time.Duration(s.cfg.Rate), minTick))
	defer ticker.Stop()
	sampler := time.NewTicker(sampleEvery)
	defer sampler.Stop()
	start := time.Now()
	samples := []MemorySample{s.track.sample(0)}
	for s.chunks < total {
		select {
		case <-ctx.Done():
			return nil, 0, context.Cause(ctx)
		case <-sampler.C:
			samples = append(samples, s.track.sample(time.Since(start)))
			s.cfg.Logger.Info("soak", "t", samples[len(samples)-1].T, "chunks", s.chunks,
				"rss", samples[len(samples)-1].RSSBytes, "p99ms", samples[len(samples)-1].P99Ms)
		case <-ticker.C:
		}
		due := min(total, int(time.Since(start).Seconds()*float64(s.cfg.Rate)))
		for s.chunks < due {
			if err := s.next(ctx); err != nil {
				return nil, 0, err
			}
		}
	}
	elapsed := time.Since(start)
	samples = append(samples, s.track.sample(elapsed))
	for i := range s.slots {
		if sl := &s.slots[i]; sl.id != "" {
			if err := s.send(ctx, sl.instance, s.w.end(sl.id, time.Now()), false); err != nil {
				return nil, 0, err
			}
		}
	}
	return samples, elapsed, nil
}

// next publishes the next chunk, starting its session first if the slot
// is between sessions and ending it after if it is full.
func (s *soaker) next(ctx context.Context) error {
	sl := &s.slots[s.chunks%len(s.slots)]
	if sl.id == "" {
		s.started++
		*sl = soakSlot{id: s.w.sessionID("s", s.started), instance: s.started - 1}
		if err := s.send(ctx, sl.instance, s.w.start(sl.id, time.Now()), false); err != nil {
			return err
		}
	}
	sl.seq++
	if err := s.send(ctx, sl.instance, s.w.chunk(sl.id, sl.seq, time.Now()), true); err != nil {
		return err
	}
	s.chunks++
	if sl.seq < int64(s.cfg.Chunks) {
		return nil
	}
	err := s.send(ctx, sl.instance, s.w.end(sl.id, time.Now()), false)
	sl.id = ""
	return err
}

func (s *soaker) send(ctx context.Context, inst int, e *streams.Envelope, chunk bool) error {
	at := time.Now()
	f, err := sendPatiently(ctx, 0, func(int) (jetstream.PubAckFuture, error) { return s.tb.publish(inst, e) })
	if err != nil {
		return err
	}
	s.sent.add(e, 0) // bytes are not counted: encoding twice would cost the soak
	select {
	case s.acks <- pendingAck{f: f, at: at, chunk: chunk}:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// resolve reads every ack in publish order, hands each chunk's sequence to
// the tracker and returns the highest sequence.
func (s *soaker) resolve(ctx context.Context) (uint64, error) {
	var last uint64
	for p := range s.acks {
		select {
		case ack := <-p.f.Ok():
			if ack.Duplicate {
				return last, fmt.Errorf("publish sequence %d: stored as a duplicate", ack.Sequence)
			}
			last = max(last, ack.Sequence)
			if p.chunk {
				s.track.ack(ack.Sequence, p.at)
			}
		case err := <-p.f.Err():
			return last, fmt.Errorf("publish: %w", err)
		case <-ctx.Done():
			return last, context.Cause(ctx)
		}
	}
	return last, nil
}

// soakTracker pairs each chunk's publish time (known when its ack is read)
// with its commit time (from the recorder's hook), whichever comes first,
// and keeps only the chunks in flight.
type soakTracker struct {
	mu          sync.Mutex
	published   map[uint64]time.Time // acked, not yet committed
	committedAt map[uint64]time.Time // committed, ack not yet read
	all, window histogram
	committed   int64
	heap        []metrics.Sample
}

func newSoakTracker() *soakTracker {
	return &soakTracker{published: map[uint64]time.Time{}, committedAt: map[uint64]time.Time{},
		heap: []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}}
}

func (t *soakTracker) ack(seq uint64, published time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if at, ok := t.committedAt[seq]; ok {
		delete(t.committedAt, seq)
		t.record(at.Sub(published))
		return
	}
	t.published[seq] = published
}

// commit is the commits tap: only chunks are tracked.
func (t *soakTracker) commit(at time.Time, msgs []streams.Message) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, m := range msgs {
		if !strings.HasSuffix(m.Subject, chunkSuffix) {
			continue
		}
		if pub, ok := t.published[m.Seq]; ok {
			delete(t.published, m.Seq)
			t.record(at.Sub(pub))
			continue
		}
		t.committedAt[m.Seq] = at
	}
}

func (t *soakTracker) record(d time.Duration) {
	t.all.add(d)
	t.window.add(d)
	t.committed++
}

// sample reads the process's memory and the window's p99, and starts a new
// window.
func (t *soakTracker) sample(since time.Duration) MemorySample {
	metrics.Read(t.heap)
	var heap int64
	if v := t.heap[0].Value; v.Kind() == metrics.KindUint64 {
		heap = int64(v.Uint64())
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	m := MemorySample{T: round(since.Seconds()), RSSBytes: memory().RSSBytes, HeapBytes: heap,
		ChunksCommitted: t.committed, P99Ms: ms(t.window.quantile(0.99))}
	t.window.reset()
	return m
}

// summary checks that every chunk was measured and sums the soak up.
func (t *soakTracker) summary(rate int, elapsed time.Duration, s *soaker, samples []MemorySample, every time.Duration) (*Soak, counts, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.all.n != uint64(s.chunks) || len(t.published) > 0 || len(t.committedAt) > 0 {
		return nil, s.sent, fmt.Errorf("soak: %d chunks published, %d measured (%d acked but not committed, %d committed but not acked)",
			s.chunks, t.all.n, len(t.published), len(t.committedAt))
	}
	return &Soak{OfferedRate: rate, AchievedRate: round(float64(s.chunks) / elapsed.Seconds()),
		Seconds: round(elapsed.Seconds()), Chunks: s.chunks, Sessions: s.sent.sessions, Messages: s.sent.messages,
		P50Ms: ms(t.all.quantile(0.50)), P90Ms: ms(t.all.quantile(0.90)), P99Ms: ms(t.all.quantile(0.99)),
		MaxMs: ms(t.all.max), SampleSeconds: round(every.Seconds()), Memory: samples,
		MemoryGrowth: growth(samples)}, s.sent, nil
}

// growth compares the mean of the last quarter of the samples with the
// mean of the first quarter (one sample each when there are fewer than 8).
func growth(samples []MemorySample) MemoryGrowth {
	if len(samples) == 0 {
		return MemoryGrowth{}
	}
	q := max(len(samples)/4, 1)
	firstRSS, firstHeap := meanMemory(samples[:q])
	lastRSS, lastHeap := meanMemory(samples[len(samples)-q:])
	g := MemoryGrowth{Bytes: lastRSS - firstRSS, FirstQuartileRSSBytes: firstRSS, LastQuartileRSSBytes: lastRSS,
		HeapBytes: lastHeap - firstHeap}
	if firstRSS > 0 {
		g.Percent = round(100 * float64(g.Bytes) / float64(firstRSS))
	}
	return g
}

func meanMemory(samples []MemorySample) (rss, heap int64) {
	for _, m := range samples {
		rss += m.RSSBytes
		heap += m.HeapBytes
	}
	return rss / int64(len(samples)), heap / int64(len(samples))
}

// measureSoak runs a soak on a started testbed and fills res.
func measureSoak(ctx context.Context, tb *testbed, cfg Config, res *Result) (err error) {
	if res.Postgres, err = postgres(ctx, tb.node.Pool, tb.db.source); err != nil {
		return err
	}
	// Verification counts the raw table too: a soak leaves it empty.
	if _, err := tb.node.Pool.Exec(ctx, rawTableDDL); err != nil {
		return fmt.Errorf("create table %s: %w", rawTable, err)
	}
	cfg.Logger.Info("soak", "rate", cfg.Rate, "seconds", cfg.Duration.Seconds(), "instances", cfg.Instances)
	var sent counts
	if res.Soak, sent, err = runSoak(ctx, tb, newWorkload(randomHex(4), cfg.Payload, cfg.Events), cfg); err != nil {
		return err
	}
	cfg.Logger.Info("verifying")
	if res.Checks, err = verify(ctx, tb.node.Pool, sent, 0); err != nil {
		return err
	}
	res.Verified = res.Checks.ok()
	return nil
}
