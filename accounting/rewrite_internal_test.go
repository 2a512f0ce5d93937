package accounting

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/spinehq/spine/internal/pgtest"
)

// Rows rewritten in later batches (a telemetry session's late requests)
// keep cost_days what aggregating router_calls gives, byte for byte: rows
// that grow in place (tokens, a first usage or cost, costs of a larger
// scale, sums already saturated) and rows that move to another group (a
// new served model or billing class), which can leave a group empty, in
// batches that also write new calls.
func TestRollupFollowsRewrittenRows(t *testing.T) {
	ctx := context.Background()
	pool, _ := pgtest.New(t)
	r := rand.New(rand.NewPCG(16, 16))
	calls := randomCalls(r, 400)
	writeInBatches(t, pool, r, calls[:300])
	written, fresh := calls[:300], calls[300:]
	moved, grown := 0, 0
	for round := 0; round < 30; round++ {
		ids := map[string]bool{}
		for range 1 + r.IntN(20) {
			ids[written[r.IntN(len(written))].SessionID] = true
		}
		n := min(len(fresh), r.IntN(4))
		batch := fresh[:n]
		fresh = fresh[n:]
		tx, err := pool.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		old, err := callsByID(ctx, tx, setKeys(ids))
		if err != nil {
			t.Fatal(err)
		}
		var rws []rewrite
		for _, c := range old {
			rw := rewrite{old: c, new: grow(r, c)}
			if rw.inPlace() {
				grown++
			} else {
				moved++
			}
			rws = append(rws, rw)
		}
		if err := insertCalls(ctx, tx, batch); err != nil {
			t.Fatal(err)
		}
		if err := updateCalls(ctx, tx, rws); err != nil {
			t.Fatal(err)
		}
		if err := upsertCostDays(ctx, tx, batch, rws); err != nil {
			t.Fatal(err)
		}
		if err := tx.Commit(ctx); err != nil {
			t.Fatal(err)
		}
		written = append(written, batch...)
	}
	if moved == 0 || grown == 0 {
		t.Fatalf("%d rows moved, %d grew in place: the test covers neither path", moved, grown)
	}
	checkBackfill(t, pool)
	checkSummaries(t, pool)
}

// grow is what a row becomes after more requests: more tokens (a usage
// where it had none), a cost added to its cost (exactly, as numeric sums
// them; a first cost where it had none), and sometimes another served
// model or billing class.
func grow(r *rand.Rand, c *Call) *Call {
	n := *c
	if r.IntN(4) > 0 {
		t := Tokens{}
		if c.Tokens != nil {
			t = *c.Tokens
		}
		more := r.Int64N(1e6)
		t.Input, t.Output, t.CacheRead = addCounts(t.Input, more), addCounts(t.Output, more/2), addCounts(t.CacheRead, more/3)
		t.Total = addCounts(t.Input, t.Output)
		n.Tokens, n.Usage = &t, json.RawMessage(`{"inputTokens":1}`)
	}
	if r.IntN(3) > 0 {
		var sum decimalSum
		if o := c.cost(); o != nil {
			sum.add(*o)
		}
		sum.add([]string{"0.5", "0.125", "3", "0.0000001", "12.25"}[r.IntN(5)])
		n.costText = sum.text()
		f, _ := strconv.ParseFloat(*n.costText, 64)
		n.TotalCost = &f
	}
	switch r.IntN(6) {
	case 0:
		n.ServedModel = []string{"", "gpt-5", "opus", "haiku"}[r.IntN(4)]
	case 1:
		n.Billing = BillingClasses[r.IntN(len(BillingClasses))]
	}
	return &n
}

func setKeys(set map[string]bool) []string {
	out := make([]string, 0, len(set))
	for k := range set {
		out = append(out, k)
	}
	return out
}

// checkSummaries compares a few summaries from the rollup with the raw
// aggregate of router_calls.
func checkSummaries(t *testing.T, pool *pgxpool.Pool) {
	t.Helper()
	r := rand.New(rand.NewPCG(7, 7))
	for range 10 {
		from, to := randomInstant(r), randomInstant(r)
		if !from.Before(to) {
			from, to = to, from.AddDate(0, 0, 1)
		}
		for _, g := range []string{"day", "model", "billing", "session"} {
			sq := SummaryQuery{From: from, To: to, GroupBy: g}
			got, err := Summarize(context.Background(), pool, "acme", sq)
			if err != nil {
				t.Fatal(err)
			}
			if a, b := jsonText(t, got), jsonText(t, rawSummary(t, pool, "acme", sq)); a != b {
				t.Fatalf("by %s from %s to %s:\nrollup %s\n   raw %s", g, from, to, a, b)
			}
		}
	}
}
