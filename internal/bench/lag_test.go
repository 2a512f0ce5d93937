package bench_test

import (
	"context"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/spinehq/spine/internal/bench"
)

// A tiny lag run through the real spine binary: spine collect tails the
// files the benchmark appends fixture lines to, and spine run (of Claude
// Code's stream-json, then of Codex's exec --json) reads them from its
// app's stdout. It checks only what holds on any machine: every
// line's envelopes were committed and its text read back over HTTP (the
// run fails otherwise), and the figures are counted and ordered. It never
// compares a time with a threshold.
func TestLag(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	spine := filepath.Join(t.TempDir(), "spine")
	if out, err := exec.CommandContext(ctx, "go", "build", "-o", spine, "github.com/spinehq/spine/cmd/spine").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	res, err := bench.RunLag(ctx, bench.LagConfig{Rate: 50, Lines: 40, Sessions: 3, RawSeconds: time.Second, Spine: spine})
	if err != nil {
		t.Fatalf("RunLag: %v", err)
	}
	t.Logf("%+v", *res)
	if !res.Verified {
		t.Fatal("not verified")
	}
	for name, p := range map[string]*bench.LagPhase{"collect": res.Collect, "run": res.Run, "runCodex": res.RunCodex} {
		if p == nil {
			t.Fatalf("%s: no phase", name)
		}
		if p.LinesWritten != 40 || p.Sessions < 1 || p.Producer == "" {
			t.Errorf("%s: %+v", name, p)
		}
		c, r := p.Committed, p.Readable
		if c.Lines < 1 || c.Lines > p.LinesWritten || r.Lines < 1 || r.Lines > c.Lines || p.ObserverAdds.Lines != r.Lines {
			t.Errorf("%s: lines measured: committed %d, readable %d, observer %d of %d written",
				name, c.Lines, r.Lines, p.ObserverAdds.Lines, p.LinesWritten)
		}
		for _, f := range []bench.LagFigures{c, r} {
			if f.P50Ms <= 0 || f.P90Ms < f.P50Ms || f.P99Ms < f.P90Ms || f.MaxMs < f.P99Ms {
				t.Errorf("%s: percentiles out of order: %+v", name, f)
			}
		}
	}
	if res.Raw.Chunks != 50 || res.Observer.Gets < 1 {
		t.Errorf("raw %+v, observer %+v", res.Raw, res.Observer)
	}
}
