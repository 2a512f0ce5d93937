package bench_test

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/spinehq/spine/internal/bench"
	"github.com/spinehq/spine/streams"
)

// runTiny runs a benchmark that must verify.
func runTiny(t *testing.T, cfg bench.Config) *bench.Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	res, err := bench.Run(ctx, cfg)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if !res.Verified {
		t.Fatalf("not verified: %+v", res.Checks)
	}
	return res
}

// checkScale checks the layout and that every envelope went through some
// instance and some instance committed it.
func checkScale(t *testing.T, s *bench.Scale, instances int, nats string, replicas int, messages int64) {
	t.Helper()
	if s == nil || s.Instances != instances || s.NATS != nats || s.Replicas != replicas || s.Note == "" {
		t.Fatalf("scale %+v, want %d instances on %s at R%d", s, instances, nats, replicas)
	}
	var published int64
	for i, n := range s.PublishedByInstance {
		if n == 0 {
			t.Errorf("instance %d published nothing: %v", i, s.PublishedByInstance)
		}
		published += n
	}
	if published != messages {
		t.Errorf("published %v, sum %d, want %d", s.PublishedByInstance, published, messages)
	}
	if s.RecorderLeaders < 1 || len(s.RecorderBatchesByInstance) != instances {
		t.Errorf("recorder batches %v, leaders %d", s.RecorderBatchesByInstance, s.RecorderLeaders)
	}
}

func TestIngestInstances(t *testing.T) {
	res := runTiny(t, bench.Config{Sessions: 4, Chunks: 20, Instances: 2, LatencyDuration: bench.NoLatency})
	if res.Spine.Chunks != 80 || res.Raw.Chunks != 80 || res.Checks.ChunkRows+res.Checks.StepRows != 7*80 {
		t.Errorf("chunks: spine %d, raw %d, checks %+v", res.Spine.Chunks, res.Raw.Chunks, res.Checks)
	}
	checkScale(t, res.Scale, 2, "embedded", 1, int64(7*res.Spine.Messages))
	if p := res.Parameters; p.DuplicateWindow != streams.DuplicateWindow.Seconds() || p.Duration != 0 {
		t.Errorf("parameters %+v", p)
	}
}

func TestIngestCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: skips the three-node cluster")
	}
	res := runTiny(t, bench.Config{Sessions: 3, Chunks: 10, Instances: 3, Cluster: true, LatencyDuration: bench.NoLatency})
	if res.Spine.Chunks != 30 || res.Raw.Chunks != 30 || res.Checks.RawRows != 30 {
		t.Errorf("chunks: spine %d, raw %d, checks %+v", res.Spine.Chunks, res.Raw.Chunks, res.Checks)
	}
	checkScale(t, res.Scale, 3, "cluster", 3, int64(7*res.Spine.Messages))
}

// A soak of 2s at 100 chunks/s over 3 sessions of at most 25 chunks: 200
// chunks, each slot's 66 or 67 chunks in 3 sessions.
func TestSoak(t *testing.T) {
	var heap bytes.Buffer
	res := runTiny(t, bench.Config{Sessions: 3, Chunks: 25, Rate: 100, Duration: 2 * time.Second, Instances: 2,
		DuplicateWindow: time.Minute, HeapProfile: &heap})
	checkProfile(t, "heap", heap.Bytes())
	if p := res.Parameters; p.Duration != 2 || p.DuplicateWindow != 60 || p.Instances != 2 {
		t.Errorf("parameters %+v", p)
	}
	s := res.Soak
	if s == nil {
		t.Fatal("no soak in the result")
	}
	if s.Chunks != 200 || s.Sessions != 9 || s.Messages != 200+2*9 || s.OfferedRate != 100 {
		t.Errorf("soak counts: %+v", *s)
	}
	c := res.Checks
	if c.SessionsSent != 9 || c.SessionsEnded != 9 || c.ChunkRows+c.StepRows != 200 || c.RawRows != 0 {
		t.Errorf("verification: %+v", c)
	}
	if s.P50Ms <= 0 || s.P90Ms < s.P50Ms || s.P99Ms < s.P90Ms || s.MaxMs < s.P99Ms {
		t.Errorf("latency percentiles out of order: %+v", *s)
	}
	if len(s.Memory) < 3 {
		t.Fatalf("%d memory samples, want at least 3", len(s.Memory))
	}
	for i, m := range s.Memory {
		if m.RSSBytes <= 0 || m.HeapBytes <= 0 || (i > 0 && (m.T < s.Memory[i-1].T || m.ChunksCommitted < s.Memory[i-1].ChunksCommitted)) {
			t.Errorf("memory sample %d: %+v (previous %+v)", i, m, s.Memory[max(i-1, 0)])
		}
	}
	if g := s.MemoryGrowth; g.FirstQuartileRSSBytes <= 0 || g.LastQuartileRSSBytes-g.FirstQuartileRSSBytes != g.Bytes {
		t.Errorf("memory growth %+v", g)
	}
	checkScale(t, res.Scale, 2, "embedded", 1, int64(s.Messages))
	// A soak has no burst phases: their figures are absent, not zero.
	data, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(data, &fields); err != nil {
		t.Fatal(err)
	}
	for _, absent := range []string{"spine", "raw", "ratio", "latency"} {
		if _, ok := fields[absent]; ok {
			t.Errorf("soak JSON has %q", absent)
		}
	}
}

func TestScaleConfigRejectsNonsense(t *testing.T) {
	for _, cfg := range []bench.Config{{Instances: -1}, {Instances: bench.MaxInstances + 1}, {Duration: -time.Second}} {
		if _, err := bench.Run(context.Background(), cfg); err == nil {
			t.Errorf("Run(%+v) succeeded", cfg)
		}
	}
}

// Partitioned: the projection is spread over the instances' partitions and
// every chunk is still recorded once (the run's own verification), in all
// seven spine bursts (the first, then redaction at the door on and off).
func TestIngestPartitions(t *testing.T) {
	res := runTiny(t, bench.Config{Sessions: 6, Chunks: 20, Instances: 2, Partitions: 4, LatencyDuration: bench.NoLatency})
	if res.Spine.Chunks != 120 || res.Checks.ChunkRows+res.Checks.StepRows != 7*120 {
		t.Errorf("chunks: spine %d, checks %+v", res.Spine.Chunks, res.Checks)
	}
	if res.Scale == nil || res.Scale.Note != bench.PartitionedNote || res.Scale.Partitions != 4 {
		t.Fatalf("scale = %+v", res.Scale)
	}
	checkBurst(t, res.Scale.Burst, res.Spine, 2, 4)
}

// checkBurst checks the instances' parts of spine's first burst: the burst
// started with the partitions spread (each led by one instance, a fair
// share each), and what the instances' recorders committed adds up to what
// was sent, each envelope once.
func checkBurst(t *testing.T, b *bench.ScaleBurst, spine bench.Throughput, instances, partitions int) {
	t.Helper()
	if b == nil || len(b.Instances) != instances {
		t.Fatalf("burst %+v, want %d instances", b, instances)
	}
	var envelopes, chunks int64
	led := map[int]bool{}
	for i, in := range b.Instances {
		envelopes, chunks = envelopes+in.Envelopes, chunks+in.Chunks
		if len(in.Partitions) != partitions/instances {
			t.Errorf("instance %d led partitions %v, want %d of them", i, in.Partitions, partitions/instances)
		}
		for _, k := range in.Partitions {
			led[k] = true
		}
		if in.Chunks > 0 && (in.Batches == 0 || in.BusySeconds <= 0 || in.ChunksPerBusySecond <= 0) {
			t.Errorf("instance %d committed %d chunks: %+v", i, in.Chunks, in)
		}
	}
	if len(led) != partitions {
		t.Errorf("partitions led: %v, want %d", led, partitions)
	}
	if envelopes != int64(spine.Messages) || chunks != int64(spine.Chunks) {
		t.Errorf("instances committed %d envelopes, %d chunks; the burst sent %d, %d", envelopes, chunks, spine.Messages, spine.Chunks)
	}
	if b.Seconds != spine.Seconds || b.CPU.Cores < 1 {
		t.Errorf("burst %+v, spine %+v", b, spine)
	}
}
