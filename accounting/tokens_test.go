package accounting_test

import (
	"math"
	"net/url"
	"testing"

	"github.com/spinehq/spine/accounting"
	"github.com/spinehq/spine/internal/spinetest"
	"github.com/spinehq/spine/streams"
)

// Normalise never overflows into a negative count, whatever it is handed:
// each count is clamped to 0..streams.MaxTokens before it is added.
func TestNormaliseClampsHugeCounts(t *testing.T) {
	got := accounting.Normalise(&streams.Usage{InputTokens: math.MaxInt64, OutputTokens: math.MaxInt64,
		CacheReadTokens: math.MaxInt64, CacheWriteTokens: math.MaxInt64, ReasoningTokens: math.MinInt64})
	const maxT = streams.MaxTokens
	want := accounting.Tokens{Input: 3 * maxT, Output: maxT, CacheRead: maxT, CacheWrite: maxT, Reasoning: 0, Total: 4 * maxT}
	if *got != want {
		t.Fatalf("Normalise = %+v, want %+v", *got, want)
	}
}

// The largest counts validation lets through are stored and counted in
// the metrics; a summary whose sums pass 2^63-1 saturates there instead of
// failing.
func TestHugeTokenCounts(t *testing.T) {
	f := newFixture(t)
	big := int64(streams.MaxTokens)
	end := spinetest.End("huge", "done", "m", "")
	end.Billing = "metered"
	end.Usage = &streams.Usage{InputTokens: big, OutputTokens: big, CacheReadTokens: big, CacheWriteTokens: big, ReasoningTokens: big}
	f.publish(spinetest.Start("huge"), end)
	f.wait()
	if got := f.calls("huge"); len(got) != 1 || *got[0].Input != 3*big || *got[0].Output != big {
		t.Fatalf("row %+v", got)
	}
	for kind, want := range map[string]int64{"input": 3 * big, "output": big, "reasoning": big} {
		if n := f.metric("spine_accounting_tokens_total", map[string]string{"kind": kind}); n != float64(want) {
			t.Errorf("%s tokens counter = %g, want %d", kind, n, want)
		}
	}

	// Rows written by hand at the bigint limit (no envelope can carry them).
	for _, id := range []string{"max1", "max2"} {
		if _, err := f.Pool.Exec(ctx, `INSERT INTO router_calls (session_id, org, member, app, plan_id, execution_surface,
				status, billing, input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, reasoning_tokens,
				started_at, at)
			VALUES ($1, 'acme', 'alice', 'codex', 'p', 'cockpit-app:codex', 'done', 'metered', $2, $2, $2, $2, $2, $3, $3)`,
			id, int64(math.MaxInt64), end.At); err != nil {
			t.Fatal(err)
		}
	}
	f.rollUpByHand("max1", "max2")
	// Whole days are read from cost_days, a window of partial days from
	// router_calls: both saturate.
	for _, w := range []url.Values{{"from": {"2026-11-01"}, "to": {"2026-11-30"}},
		{"from": {"2026-11-01T00:00:01Z"}, "to": {"2026-11-29T23:59:59Z"}}} {
		s := summary(t, f, "acme", w)
		m := s.Total.Metered.Tokens
		if m.Input != math.MaxInt64 || m.Output != math.MaxInt64 || m.Total != math.MaxInt64 || m.Reasoning != math.MaxInt64 {
			t.Fatalf("%v: saturated total %+v", w, m)
		}
	}
	p, err := accounting.GetPlanSpend(ctx, f.Pool, "acme", "p", "")
	if err != nil || p.TokenSpent != math.MaxInt64 {
		t.Fatalf("plan spend %+v, %v", p, err)
	}
}
