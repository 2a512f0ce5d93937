package bench_test

import (
	"context"
	"testing"
	"time"

	"github.com/spinehq/spine/internal/bench"
)

// A tiny fairness run: both runs finish, and with a quota smaller than the
// burst org A is told to wait (429 with Retry-After) and its burst still
// all arrives. The outcome the quota is for: org B's session, sent once half
// of A's burst is in, is readable before the rest of A's burst has even been
// accepted, so B waited for what was ahead of it and not for all of A. At
// 256 KiB/s the second half of A takes 8 s to be admitted; the recorder
// needs far less for the 2 MiB ahead of B even on a loaded machine.
func TestFairness(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	const burst = 4 << 20
	res, err := bench.Fairness(ctx, bench.FairnessConfig{BurstBytes: burst, ChunkBytes: 64 << 10, SessionChunks: 4,
		Senders: 2, OrgBytesPerSec: 256 << 10})
	if err != nil {
		t.Fatalf("Fairness: %v", err)
	}
	t.Logf("%+v", *res)
	if res.Off.ARetried != 0 || res.Off.OrgBytesPerSec != 0 || res.Off.AStatuses["207"] != 16 {
		t.Errorf("quotas off: %+v", res.Off)
	}
	if res.On.ARetried == 0 || res.On.AStatuses["429"] == 0 || res.On.AStatuses["207"] != 16 || res.On.OrgBytesPerSec != 256<<10 {
		t.Errorf("quotas on: %+v", res.On)
	}
	if res.Off.AAcceptedBeforeB < burst/2 || res.On.AAcceptedBeforeB < burst/2 {
		t.Errorf("B was sent before half of A's burst was accepted: %+v", res)
	}
	if res.On.AAcceptedWhenBReadable >= res.On.AAccepted {
		t.Errorf("with quotas on B's session was readable only after all of A's burst was accepted: %+v", res.On)
	}
}
