package bench_test

import (
	"context"
	"testing"
	"time"

	"github.com/spinehq/spine/internal/bench"
)

// A tiny OTLP run: every phase's sessions, steps and ledgered requests are
// what it sent, with no dead letter, and the figures are counted. It never
// compares a time with a threshold.
func TestOTLP(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	res, err := bench.RunOTLP(ctx, bench.OTLPConfig{Sessions: 3, Events: 8, PerRequest: 3, Concurrency: 2})
	if err != nil {
		t.Fatalf("RunOTLP: %v", err)
	}
	t.Logf("%+v", *res)
	if !res.Verified || len(res.Checks) != 2 {
		t.Fatalf("not verified: %+v, %d dead letters", res.Checks, res.DeadLetters)
	}
	for name, p := range map[string]bench.OTLPPhase{"protobuf": res.Protobuf, "json": res.JSON} {
		// 3 sessions of 8 records, 3 a request: 3 requests a session.
		if p.Events != 24 || p.Requests != 9 || p.Bytes <= 0 || p.EventsPerS <= 0 || p.Statuses["200"] != 9 {
			t.Errorf("%s: %+v", name, p)
		}
	}
	if res.Raw.Messages != 24 || res.RawRows != 24 || res.Raw.MessagesPerSecond <= 0 {
		t.Errorf("raw %+v, %d rows", res.Raw, res.RawRows)
	}
	if res.RatioProtobuf <= 0 || res.RatioJSON <= 0 {
		t.Errorf("ratios %v, %v", res.RatioProtobuf, res.RatioJSON)
	}
}
