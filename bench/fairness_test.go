package bench_test

import (
	"context"
	"testing"
	"time"

	"github.com/spinehq/spine/bench"
)

// A tiny fairness run: both runs finish, org B's session reads back each
// time, and with a quota smaller than the burst org A is told to wait
// (429 with Retry-After) and its burst still all arrives.
func TestFairness(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	res, err := bench.Fairness(ctx, bench.FairnessConfig{BurstBytes: 2 << 20, ChunkBytes: 64 << 10, SessionChunks: 4,
		Senders: 2, OrgBytesPerSec: 256 << 10})
	if err != nil {
		t.Fatalf("Fairness: %v", err)
	}
	t.Logf("%+v", *res)
	if res.Off.ARetried != 0 || res.Off.OrgBytesPerSec != 0 || res.Off.AStatuses["207"] != 8 {
		t.Errorf("quotas off: %+v", res.Off)
	}
	if res.On.ARetried == 0 || res.On.AStatuses["429"] == 0 || res.On.AStatuses["207"] != 8 || res.On.OrgBytesPerSec != 256<<10 {
		t.Errorf("quotas on: %+v", res.On)
	}
	if res.Off.AAcceptedBeforeB < 1<<20 || res.On.AAcceptedBeforeB < 1<<20 {
		t.Errorf("B was sent before half of A's burst was accepted: %+v", res)
	}
}
