package bench

import (
	"context"
	"fmt"
	"math"
	"runtime/metrics"
	"slices"
	"sort"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/spinehq/spine/streams"
)

// Breakdown is where the latency phase's chunks spent their time from
// publish to commit: the log (publish → JetStream stored it, by the
// message's own stored time), delivery and queue (stored → its batch
// began: the fetch, and waiting for the loop to finish the batch before),
// then by its batch's times (streams.BatchTimes) apply (BEGIN, the
// checkpoint's lock and move, the recorder's work) and commit (dead
// letters, COMMIT and its WAL flush).
type Breakdown struct {
	Batches           int     `json:"batches"`
	MeanBatchMessages float64 `json:"meanBatchMessages"`
	// Parts are each part's percentiles over every chunk.
	Parts map[string]Spread `json:"partsMs"`
	// Tail is the mean of each part over the chunks at or past the total's
	// p99: what the slowest 1% waited for.
	Tail map[string]float64 `json:"tailMeanMs"`
	// PhaseSeconds is the recorder loop's time by phase during the phase
	// (see Throughput.PhaseSeconds).
	PhaseSeconds map[string]float64 `json:"phaseSeconds"`
	// WAL is PostgreSQL's WAL flushes during the phase (pg_stat_wal, the
	// whole server: fsync is in COMMIT).
	WAL *WALStats `json:"wal,omitempty"`
	// GC is the process's garbage collection over the phase (spine, its
	// nats-server and the benchmark share one heap): while a cycle marks,
	// it takes a share of the two cores the loop needs, and the chunks of
	// those moments queue (docs/performance.md#latency-where-the-time-goes).
	GC   GCStats `json:"gc"`
	Note string  `json:"note,omitempty"`
}

// GCStats is the change of the Go runtime's collector counters over a
// phase (runtime/metrics): cycles completed, the CPU they spent (the
// runtime's estimate), the part of it spent marking on otherwise idle
// CPU (which took no core from anyone), and the live heap the last cycle
// found.
type GCStats struct {
	Cycles         uint64  `json:"cycles"`
	CPUSeconds     float64 `json:"cpuSeconds"`
	IdleCPUSeconds float64 `json:"idleCpuSeconds"`
	LiveHeapBytes  uint64  `json:"liveHeapBytes"`
}

// gcMetrics are the runtime/metrics GCStats reads, in readGC's order.
var gcMetrics = []string{"/gc/cycles/total:gc-cycles", "/cpu/classes/gc/total:cpu-seconds",
	"/cpu/classes/gc/mark/idle:cpu-seconds", "/gc/heap/live:bytes"}

// readGC reads the collector's counters now.
func readGC() GCStats {
	s := make([]metrics.Sample, len(gcMetrics))
	for i, name := range gcMetrics {
		s[i].Name = name
	}
	metrics.Read(s)
	var g GCStats
	if v := s[0].Value; v.Kind() == metrics.KindUint64 {
		g.Cycles = v.Uint64()
	}
	if v := s[1].Value; v.Kind() == metrics.KindFloat64 {
		g.CPUSeconds = v.Float64()
	}
	if v := s[2].Value; v.Kind() == metrics.KindFloat64 {
		g.IdleCPUSeconds = v.Float64()
	}
	if v := s[3].Value; v.Kind() == metrics.KindUint64 {
		g.LiveHeapBytes = v.Uint64()
	}
	return g
}

// since is the counters' change from before to g, with g's live heap.
func (g GCStats) since(before GCStats) GCStats {
	return GCStats{Cycles: g.Cycles - before.Cycles, CPUSeconds: round(g.CPUSeconds - before.CPUSeconds),
		IdleCPUSeconds: round(g.IdleCPUSeconds - before.IdleCPUSeconds), LiveHeapBytes: g.LiveHeapBytes}
}

// Spread is a part's nearest-rank percentiles and mean, in milliseconds.
type Spread struct {
	P50  float64 `json:"p50"`
	P99  float64 `json:"p99"`
	Mean float64 `json:"mean"`
}

// WALStats is the change of pg_stat_wal over a phase: Syncs counts every
// WAL flush of the server; SyncMs times only those the run's database's
// connections made (track_wal_io_timing is set for them; the WAL writer's
// are counted, not timed), and is null when PostgreSQL timed none (the
// setting not ours to make).
type WALStats struct {
	Syncs      int64    `json:"syncs"`
	SyncMs     *float64 `json:"syncMs"`
	MeanSyncMs *float64 `json:"meanSyncMs"`
}

// partNames are the parts of a chunk's latency, in order.
var partNames = []string{"log", "deliveredAndQueued", "apply", "commit"}

// breakdown splits each chunk's latency by the batch that committed it.
// published(i) is when chunk i was published and seqs[i] its sequence;
// batches are sorted by last sequence.
func breakdown(published func(int) time.Time, seqs []uint64, batches []streams.BatchTimes, storedAt func(uint64) time.Time) Breakdown {
	b := Breakdown{Batches: len(batches), Parts: map[string]Spread{}, Tail: map[string]float64{}}
	if len(batches) == 0 || len(seqs) == 0 {
		b.Note = "no batch times were kept"
		return b
	}
	n := 0
	for _, t := range batches {
		n += t.Messages
	}
	b.MeanBatchMessages = round(float64(n) / float64(len(batches)))
	parts := make([][]time.Duration, len(partNames))
	type chunk struct {
		total time.Duration
		part  [4]time.Duration
	}
	chunks := make([]chunk, 0, len(seqs))
	for i, seq := range seqs {
		j := sort.Search(len(batches), func(k int) bool { return batches[k].Last >= seq })
		if j == len(batches) {
			continue
		}
		t, stored := batches[j], storedAt(seq)
		if stored.IsZero() {
			continue
		}
		at := published(i)
		c := chunk{total: t.Committed.Sub(at), part: [4]time.Duration{stored.Sub(at),
			t.Began.Sub(stored), t.Handled.Sub(t.Began), t.Committed.Sub(t.Handled)}}
		for k := range parts {
			parts[k] = append(parts[k], c.part[k])
		}
		chunks = append(chunks, c)
	}
	for k, name := range partNames {
		b.Parts[name] = spread(parts[k])
	}
	slices.SortFunc(chunks, func(x, y chunk) int { return int(x.total - y.total) })
	tail := chunks[max(int(math.Ceil(0.99*float64(len(chunks))))-1, 0):] // from the p99 chunk on
	for k, name := range partNames {
		var sum time.Duration
		for _, c := range tail {
			sum += c.part[k]
		}
		b.Tail[name] = ms(sum / time.Duration(max(len(tail), 1)))
	}
	return b
}

func spread(ds []time.Duration) Spread {
	if len(ds) == 0 {
		return Spread{}
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	var sum time.Duration
	for _, d := range s {
		sum += d
	}
	return Spread{P50: ms(percentile(s, 0.5)), P99: ms(percentile(s, 0.99)), Mean: ms(sum / time.Duration(len(s)))}
}

// walReading is pg_stat_wal at one moment.
type walReading struct {
	syncs  int64
	syncMs float64
	timed  bool
}

func readWAL(ctx context.Context, pool *pgxpool.Pool) (walReading, error) {
	var r walReading
	var timing string
	err := pool.QueryRow(ctx, `SELECT wal_sync, wal_sync_time, current_setting('track_wal_io_timing') FROM pg_stat_wal`).
		Scan(&r.syncs, &r.syncMs, &timing)
	if err != nil {
		return r, fmt.Errorf("pg_stat_wal: %w", err)
	}
	r.timed = timing == "on"
	return r, nil
}

func (r walReading) since(before walReading) *WALStats {
	w := &WALStats{Syncs: r.syncs - before.syncs}
	if r.timed && before.timed {
		t := round(r.syncMs - before.syncMs)
		w.SyncMs = &t
		if w.Syncs > 0 {
			m := round(t / float64(w.Syncs))
			w.MeanSyncMs = &m
		}
	}
	return w
}

// timeWAL asks PostgreSQL to time the WAL flushes of the run's database
// (track_wal_io_timing, a superuser's setting) for connections made after
// it; without the right the WAL figures carry counts only.
func timeWAL(ctx context.Context, url, name string) {
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return
	}
	defer conn.Close(ctx)
	_, _ = conn.Exec(ctx, "ALTER DATABASE "+pgx.Identifier{name}.Sanitize()+" SET track_wal_io_timing = on")
}
