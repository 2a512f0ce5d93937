package accounting

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/spinehq/spine/internal/checksum"
	"github.com/spinehq/spine/internal/pgtest"
	"github.com/spinehq/spine/streams"
)

// rawKeys group router_calls as summaries did before cost_days: the
// oracle the rollup is held to.
var rawKeys = map[string]string{
	"day":     `to_char(at AT TIME ZONE 'UTC', 'YYYY-MM-DD')`,
	"week":    `to_char(date_trunc('week', at AT TIME ZONE 'UTC'), 'YYYY-MM-DD')`,
	"month":   `to_char(at AT TIME ZONE 'UTC', 'YYYY-MM')`,
	"app":     `app`,
	"model":   `served_model`,
	"billing": `billing`,
	"member":  `member`,
	"machine": `worker_id`,
	"plan":    `plan_id`,
	"session": `session_id`,
}

// rawSummary is the summary aggregated from router_calls alone.
func rawSummary(t *testing.T, pool *pgxpool.Pool, org string, sq SummaryQuery) *Summary {
	t.Helper()
	ctx := context.Background()
	const where = `at >= $2 AND at < $3 AND ($4 = '' OR member = $4)`
	rows, err := aggregate(ctx, pool, rawKeys[sq.GroupBy], where, org, sq.From, sq.To, sq.Member)
	if err != nil {
		t.Fatal(err)
	}
	total, err := aggregate(ctx, pool, `'total'`, where, org, sq.From, sq.To, sq.Member)
	if err != nil {
		t.Fatal(err)
	}
	// Keys in byte order, whatever the test database's collation.
	slices.SortFunc(rows, func(a, b Row) int { return strings.Compare(a.Key, b.Key) })
	s := &Summary{Org: org, Member: sq.Member, From: sq.From, To: sq.To, GroupBy: sq.GroupBy, Rows: rows, Total: Row{Key: "total"}}
	if s.Rows == nil {
		s.Rows = []Row{}
	}
	if len(total) == 1 {
		s.Total = total[0]
	}
	return s
}

// randomCalls makes calls of two orgs over six weeks (crossing months and
// weeks), some at midnight or a microsecond before it, with and without
// usage and cost, costs of many scales and token counts big enough that
// some groups saturate; a third of them fall in one group.
func randomCalls(r *rand.Rand, n int) []*Call {
	base := time.Date(2026, 10, 25, 0, 0, 0, 0, time.UTC)
	pick := func(s ...string) string { return s[r.IntN(len(s))] }
	costs := []float64{0, 0.1, 0.25, 1.5, 3, 0.000001, 12345.678, 1e-7, 0.3333333333333333, 1e15}
	var out []*Call
	for i := range n {
		at := base.Add(time.Duration(r.IntN(42*24*3600)) * time.Second).Add(time.Duration(r.IntN(1e6)) * time.Microsecond)
		switch r.IntN(8) {
		case 0:
			at = at.Truncate(24 * time.Hour)
		case 1:
			at = at.Truncate(24 * time.Hour).Add(-time.Microsecond)
		}
		c := &Call{SessionID: fmt.Sprintf("s%04d", i), Org: pick("acme", "acme", "globex"), Member: pick("alice", "bob", "carol"),
			App: pick("codex", "claude-code"), PlanID: pick("", "p1", "p2"), ServedModel: pick("", "gpt-5", "opus", "Opus", "Ünï-模型"),
			WorkerID: pick("", "w1", "w2", "W1", "laptop_9"), Billing: pick(BillingClasses...), Status: "done",
			StartedAt: at.Add(-time.Minute), At: at}
		if r.IntN(3) == 0 { // a third share one group, so it fills over many batches and saturates
			at = time.Date(2026, 11, 3, 0, 0, 0, 0, time.UTC).Add(time.Duration(r.Int64N(24*3600*1e6)) * time.Microsecond)
			c.Org, c.Member, c.App, c.PlanID, c.ServedModel, c.Billing = "acme", "alice", "codex", "p1", "opus", BillingMetered
			c.WorkerID = "w1"
			c.StartedAt, c.At = at.Add(-time.Minute), at
		}
		c.ExecutionSurface = ExecutionSurface(c.App)
		if r.IntN(10) < 7 {
			c.Usage = json.RawMessage(`{}`)
			tk := func() int64 {
				if r.IntN(8) == 0 {
					return math.MaxInt64 / 3 // no envelope carries this; a few saturate a group
				}
				return r.Int64N(1e6)
			}
			c.Tokens = &Tokens{Input: tk(), Output: tk(), CacheRead: tk(), CacheWrite: tk(), Reasoning: tk()}
		}
		if r.IntN(10) < 6 {
			c.TotalCost = &costs[r.IntN(len(costs))]
		}
		out = append(out, c)
	}
	return out
}

// writeInBatches writes calls as the projector does, in transactions of
// random sizes, so days fill over several batches (ON CONFLICT).
func writeInBatches(t *testing.T, pool *pgxpool.Pool, r *rand.Rand, calls []*Call) {
	t.Helper()
	ctx := context.Background()
	for len(calls) > 0 {
		n := min(len(calls), 1+r.IntN(60))
		if err := writeBatch(ctx, pool, calls[:n]); err != nil {
			t.Fatal(err)
		}
		calls = calls[n:]
	}
}

func writeBatch(ctx context.Context, pool *pgxpool.Pool, calls []*Call) error {
	tx, err := pool.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback(ctx)
	if err := insertCalls(ctx, tx, calls); err != nil {
		return err
	}
	if err := upsertCostDays(ctx, tx, calls, nil); err != nil {
		return err
	}
	return tx.Commit(ctx)
}

// randomInstant is a window edge: a midnight, a microsecond either side
// of one, or any microsecond.
func randomInstant(r *rand.Rand) time.Time {
	day := time.Date(2026, 10, 24, 0, 0, 0, 0, time.UTC).AddDate(0, 0, r.IntN(45))
	switch r.IntN(4) {
	case 0:
		return day
	case 1:
		return day.Add(time.Microsecond)
	case 2:
		return day.Add(-time.Microsecond)
	}
	return day.Add(time.Duration(r.Int64N(24*3600*1e6)) * time.Microsecond)
}

// Summaries answered from cost_days (whole days) and router_calls (the
// partial days at the edges) equal the aggregate of router_calls alone, for
// every groupBy over random calls and windows; walked in pages of random
// sizes, they list the same rows.
func TestRollupAnswersEqualRawAggregate(t *testing.T) {
	pool, _ := pgtest.New(t)
	for seed := range uint64(3) {
		r := rand.New(rand.NewPCG(seed, 42))
		if _, err := pool.Exec(context.Background(), `TRUNCATE router_calls, cost_days`); err != nil {
			t.Fatal(err)
		}
		calls := randomCalls(r, 600)
		writeInBatches(t, pool, r, calls)
		instant := func() time.Time {
			if r.IntN(3) == 0 { // at a call, or just after it: an edge day with no call outside the window, or one
				return calls[r.IntN(len(calls))].At.Add(time.Duration(r.IntN(2)) * time.Microsecond)
			}
			return randomInstant(r)
		}
		for range 40 {
			from, to := instant(), instant()
			switch r.IntN(4) {
			case 0: // whole days, as a user types them
				from, to = from.Truncate(24*time.Hour), to.Truncate(24*time.Hour)
			case 1: // within a day or two
				to = from.Add(time.Duration(r.Int64N(int64(36 * time.Hour))))
			}
			if !from.Before(to) {
				from, to = to, from.Add(time.Microsecond)
			}
			for _, g := range GroupBys {
				for _, scope := range [][2]string{{"acme", ""}, {"globex", ""}, {"initech", ""}, {"acme", "bob"}} {
					org, sq := scope[0], SummaryQuery{From: from, To: to, GroupBy: g, Member: scope[1]}
					got, err := Summarize(context.Background(), pool, org, sq)
					if err != nil {
						t.Fatal(err)
					}
					if a, b := jsonText(t, got), jsonText(t, rawSummary(t, pool, org, sq)); a != b {
						t.Fatalf("seed %d, %s by %s from %s to %s:\nrollup %s\n   raw %s", seed, org, g,
							from.Format(time.RFC3339Nano), to.Format(time.RFC3339Nano), a, b)
					}
					limit := 1 + r.IntN(7)
					if g == "session" {
						limit = 20 + r.IntN(80)
					}
					checkPages(t, pool, org, sq, got, limit)
				}
			}
		}
		checkBackfill(t, pool)
	}
}

// checkBackfill holds migration 014's backfill of cost_days from
// router_calls (006's, grouped by machine too) to what the projector wrote.
func checkBackfill(t *testing.T, pool *pgxpool.Pool) {
	t.Helper()
	ctx := context.Background()
	backfill := migrationBackfill(t, 14)
	projected := costDaysSum(t, pool)
	if _, err := pool.Exec(ctx, `TRUNCATE cost_days`); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, backfill); err != nil {
		t.Fatal(err)
	}
	if backfilled := costDaysSum(t, pool); projected != backfilled {
		t.Fatalf("cost_days: projector %s, backfill %s", projected, backfilled)
	}
}

// costDaysSum is cost_days' rows and checksum, as spine rebuild --verify
// compares them.
func costDaysSum(t *testing.T, q streams.Querier) string {
	t.Helper()
	sums, err := checksum.Compute(context.Background(), q)
	if err != nil {
		t.Fatal(err)
	}
	return sums["cost_days"]
}

// checkPages walks the summary in pages of limit rows: they list the
// whole summary's rows in order, each with the whole window's total, and
// only the last has no next.
func checkPages(t *testing.T, pool *pgxpool.Pool, org string, sq SummaryQuery, whole *Summary, limit int) {
	t.Helper()
	rows := []Row{}
	sq.Limit = limit
	for pages := 0; ; pages++ {
		page, err := Summarize(context.Background(), pool, org, sq)
		if err != nil {
			t.Fatal(err)
		}
		if len(page.Rows) > limit || jsonText(t, page.Total) != jsonText(t, whole.Total) || pages > len(whole.Rows) {
			t.Fatalf("%s by %s, page %d of %d: %d rows, total %+v", org, sq.GroupBy, pages, limit, len(page.Rows), page.Total)
		}
		rows = append(rows, page.Rows...)
		if page.Next == nil {
			break
		}
		if *page.Next != page.Rows[len(page.Rows)-1].Key || len(page.Rows) != limit {
			t.Fatalf("%s by %s: next %q after %d rows ending %q", org, sq.GroupBy, *page.Next, len(page.Rows),
				page.Rows[len(page.Rows)-1].Key)
		}
		sq.After = page.Next
	}
	if a, b := jsonText(t, rows), jsonText(t, whole.Rows); a != b {
		t.Fatalf("%s by %s in pages of %d:\n%s\nwhole:\n%s", org, sq.GroupBy, limit, a, b)
	}
}

func jsonText(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// A batch's costs add up as numeric adds them: exactly, at the largest
// scale of the terms.
func TestDecimalSum(t *testing.T) {
	for _, c := range []struct {
		terms []string
		want  string
	}{
		{nil, "<nil>"},
		{[]string{"0"}, "0"},
		{[]string{"0.25", "0.75"}, "1.00"},
		{[]string{"1.5", "0.05", "3"}, "4.55"},
		{[]string{"0.0000001", "0.1"}, "0.1000001"},
		{[]string{"1000000000000000", "0.3333333333333333"}, "1000000000000000.3333333333333333"},
		{[]string{"0.000001", "-0.5"}, "-0.499999"},
	} {
		var d decimalSum
		for _, s := range c.terms {
			d.add(s)
		}
		got := "<nil>"
		if p := d.text(); p != nil {
			got = *p
		}
		if got != c.want {
			t.Errorf("sum of %v = %s, want %s", c.terms, got, c.want)
		}
	}
}

// A call's day is the date PostgreSQL gives its time, year 0 (1 BC) and
// year 9999 included, so the projector's rollup and migration 006's
// backfill ((at AT TIME ZONE 'UTC')::date) agree at the edges too.
func TestPgDayIsPostgresDate(t *testing.T) {
	pool, _ := pgtest.New(t)
	for _, at := range []time.Time{time.Date(0, 6, 1, 23, 30, 0, 0, time.UTC), time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(2026, 11, 29, 23, 59, 59, 999_999_000, time.UTC), time.Date(9999, 12, 31, 12, 0, 0, 0, time.FixedZone("", -3600))} {
		var same bool
		err := pool.QueryRow(context.Background(), `SELECT $1::date = ($2::timestamptz AT TIME ZONE 'UTC')::date`,
			pgDay(at), at).Scan(&same)
		if err != nil || !same {
			t.Errorf("%s: pgDay %q is not PostgreSQL's date (%v)", at, pgDay(at), err)
		}
	}
}
