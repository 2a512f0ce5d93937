package bench_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"runtime/pprof"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/spinehq/spine/internal/bench"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// TestIngest runs a tiny benchmark and checks only what must hold on any
// machine: everything sent was projected, and the figures are sane. It
// never compares wall-clock figures with thresholds.
func TestIngest(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	// A CPU profile is one per process: under `go test -cpuprofile` the
	// burst's cannot be taken, and only that check is left out.
	var burstProfile bytes.Buffer
	cfg := bench.Config{Sessions: 2, Chunks: 50, LatencyDuration: time.Second, Rate: 200, BurstProfile: &burstProfile}
	profiling := pprof.StartCPUProfile(io.Discard) != nil
	if profiling {
		t.Log("a CPU profile is running (go test -cpuprofile): the burst's profile is not checked")
		cfg.BurstProfile = nil
	} else {
		pprof.StopCPUProfile()
	}
	res, err := bench.Run(ctx, cfg)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if !profiling {
		checkProfile(t, "burst cpu", burstProfile.Bytes())
	}
	t.Logf("%+v", *res)
	c := res.Checks
	if !res.Verified {
		t.Fatalf("not verified: %+v", c)
	}
	// Burst: 2 sessions × 50 chunks, 5 of each 50 events, seven times
	// (once, then three times with redaction and three without).
	// Latency: 200 chunks/s for 1s over 2 fresh sessions.
	if c.SessionsSent != 16 || c.SessionsEnded != 16 {
		t.Errorf("sessions sent %d, ended %d; want 16, 16", c.SessionsSent, c.SessionsEnded)
	}
	if got := c.TextChunksSent + c.EventChunksSent; got != 7*100+200 {
		t.Errorf("chunks sent %d, want 900", got)
	}
	if c.ChunkRows+c.StepRows != 900 || c.RawRows != 100 || c.DeadLetters != 0 {
		t.Errorf("rows: %+v", c)
	}
	if c.EventChunksSent == 0 {
		t.Errorf("no event chunks sent: %+v", c)
	}
	checkThroughput(t, "spine", res.Spine)
	checkThroughput(t, "raw", res.Raw)
	if res.Ratio <= 0 {
		t.Errorf("ratio %g, want > 0", res.Ratio)
	}
	if r := res.Redaction; r == nil || r.Rounds != 3 || r.Ratio <= 0 || r.RatioUnredacted <= 0 || r.MicrosPerEnvelope <= 0 {
		t.Errorf("redaction = %+v", res.Redaction)
	}
	l := res.Latency
	if l.Chunks != 200 {
		t.Errorf("latency chunks %d, want 200", l.Chunks)
	}
	if l.P50Ms < 0 || l.P90Ms < l.P50Ms || l.P99Ms < l.P90Ms || l.MaxMs < l.P99Ms {
		t.Errorf("latency percentiles out of order: %+v", l)
	}
	// Every chunk is split into its four parts, each of which can only be
	// zero or more (they are differences of times in order).
	if b := l.Breakdown; b == nil || b.Batches < 1 || len(b.Parts) != 4 || len(b.Tail) != 4 {
		t.Fatalf("latency breakdown = %+v", l.Breakdown)
	}
	if g := l.Breakdown.GC; g.LiveHeapBytes == 0 || g.CPUSeconds < 0 {
		t.Errorf("latency gc = %+v, want the live heap read", g)
	}
	for name, p := range l.Breakdown.Parts {
		if p.P50 < 0 || p.P99 < p.P50 || p.Mean < 0 {
			t.Errorf("latency part %s = %+v", name, p)
		}
	}
	if tp := res.Spine.PhaseSeconds; tp["handle"] <= 0 || tp["commit"] <= 0 {
		t.Errorf("spine's phase seconds = %v, want handle and commit above 0", tp)
	}
}

func checkThroughput(t *testing.T, path string, tp bench.Throughput) {
	t.Helper()
	if tp.Messages != 2*(50+2) || tp.Chunks != 100 || tp.Bytes <= 0 {
		t.Errorf("%s: counts %+v", path, tp)
	}
	if tp.Seconds <= 0 || tp.ChunksPerSecond <= 0 || tp.Batches < 1 {
		t.Errorf("%s: figures %+v", path, tp)
	}
	// A burst this small may take less than a clock tick of /proc's: only
	// that the run's CPU was read is certain.
	if tp.CPU.Cores < 1 || tp.CoreMicrosPerChunk < 0 {
		t.Errorf("%s: cpu %+v, %g core-µs a chunk", path, tp.CPU, tp.CoreMicrosPerChunk)
	}
}

func TestConfigRejectsNonsense(t *testing.T) {
	for _, cfg := range []bench.Config{{Events: 1.5}, {Sessions: -1}, {Payload: 2 << 20},
		{BurstProfile: io.Discard, Duration: time.Second}, {HeapProfile: io.Discard}} {
		if _, err := bench.Run(context.Background(), cfg); !errors.Is(err, bench.ErrInvalidConfig) {
			t.Errorf("Run(%+v) = %v, want ErrInvalidConfig", cfg, err)
		}
	}
}

// checkProfile: a pprof profile is gzipped protobuf.
func checkProfile(t *testing.T, what string, data []byte) {
	t.Helper()
	if len(data) < 20 || data[0] != 0x1f || data[1] != 0x8b {
		t.Errorf("%s profile: %d bytes, not a gzipped profile", what, len(data))
	}
}
