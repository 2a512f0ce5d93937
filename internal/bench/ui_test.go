package bench_test

import (
	"context"
	"testing"
	"time"

	"github.com/spinehq/spine/internal/bench"
)

// TestUI runs a small ui benchmark: the session is recorded as sent and
// its page holds one page of each list, however long the session; the
// figures are sane. No wall-clock threshold.
func TestUI(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	res, err := bench.RunUI(ctx, bench.UIConfig{Chunks: 1200, Steps: 150, Samples: 3})
	if err != nil {
		t.Fatalf("RunUI: %v", err)
	}
	t.Logf("%+v", *res)
	if s := res.Sent; s.Chunks != 1200 || s.Steps != 150 || s.Holes != 1 {
		t.Errorf("sent %+v, want 1200 chunks, 150 steps, 1 hole", s)
	}
	if !res.Verified || res.Page.Lines != 500 || res.Page.Steps != 100 || res.Raw.Lines != 500 || res.Raw.Steps != 100 {
		t.Errorf("page %+v, raw %+v: want 500 lines and 100 steps each", res.Page, res.Raw)
	}
	for name, r := range map[string]bench.UIRender{"page": res.Page, "raw": res.Raw} {
		if r.Samples != 3 || r.P50Ms <= 0 || r.P99Ms < r.P50Ms || r.MaxMs < r.P99Ms {
			t.Errorf("%s = %+v", name, r)
		}
	}
	if res.Ratio <= 0 || res.Page.Bytes == 0 {
		t.Errorf("ratio %g, page %d bytes", res.Ratio, res.Page.Bytes)
	}
	if _, err := bench.RunUI(ctx, bench.UIConfig{Chunks: -1}); err == nil {
		t.Error("chunks -1 accepted")
	}
}
