package accounting

import (
	"cmp"
	"context"
	"fmt"
	"math/big"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// dayKey is a cost_days row's group: the dimensions every summary but
// groupBy=session is answered from.
type dayKey struct {
	Org, Day, Billing, App, Model, Member, Plan, Machine string
}

func compareDayKeys(x, y dayKey) int {
	return cmp.Or(cmp.Compare(x.Org, y.Org), cmp.Compare(x.Day, y.Day), cmp.Compare(x.Billing, y.Billing),
		cmp.Compare(x.App, y.App), cmp.Compare(x.Model, y.Model), cmp.Compare(x.Member, y.Member),
		cmp.Compare(x.Plan, y.Plan), cmp.Compare(x.Machine, y.Machine))
}

// dayTotals adds up a group's calls as cost_days keeps them.
type dayTotals struct {
	calls, withUsage, withCost int64
	tokens                     [5]int64 // input, output, cache read, cache write, reasoning; saturating
	cost                       decimalSum
}

func (t *dayTotals) add(c *Call) {
	t.calls++
	if c.Usage != nil {
		t.withUsage++
	}
	if tk := c.Tokens; tk != nil {
		for i, n := range [5]int64{tk.Input, tk.Output, tk.CacheRead, tk.CacheWrite, tk.Reasoning} {
			t.tokens[i] = addCounts(t.tokens[i], n)
		}
	}
	if s := c.cost(); s != nil {
		t.withCost++
		t.cost.add(*s)
	}
}

// pgDay is t's UTC day as PostgreSQL reads a date: Go's year 0 is 1 BC
// there, as (at AT TIME ZONE 'UTC')::date makes it (envelopes' times run
// from year 0 to 9999).
func pgDay(t time.Time) string {
	t = t.UTC()
	if y := t.Year(); y <= 0 {
		return fmt.Sprintf("%04d-%02d-%02d BC", 1-y, t.Month(), t.Day())
	}
	return t.Format(time.DateOnly)
}

// dayKeyOf is the cost_days group of a call.
func dayKeyOf(c *Call) dayKey {
	return dayKey{Org: c.Org, Day: pgDay(c.At), Billing: c.Billing, App: c.App, Model: c.ServedModel,
		Member: c.Member, Plan: c.PlanID, Machine: c.WorkerID}
}

// grow adds to a group what a rewritten row (inPlace) adds to it: no call,
// the usage or cost it now reports, and its tokens' and cost's difference.
func (t *dayTotals) grow(old, new *Call) {
	t.withUsage += b2i(new.Usage != nil) - b2i(old.Usage != nil)
	if s := new.cost(); s != nil {
		t.withCost += 1 - b2i(old.cost() != nil)
		t.cost.add(*s)
		if o := old.cost(); o != nil {
			t.cost.add("-" + *o)
		}
	}
	ot, nt := tokenCounts(old.Tokens), tokenCounts(new.Tokens)
	for i := range t.tokens {
		t.tokens[i] = addCounts(t.tokens[i], nt[i]-ot[i])
	}
}

// rollUp groups new calls and rewritten rows by day key, keys in order. A
// row rewritten in place adds its difference to its group; one that moved
// adds itself to its new group and names the group it left (left, in key
// order), for recomputeDays.
func rollUp(calls []*Call, rws []rewrite) (keys []dayKey, totals map[dayKey]*dayTotals, left []dayKey) {
	totals = map[dayKey]*dayTotals{}
	group := func(c *Call) *dayTotals {
		k := dayKeyOf(c)
		t := totals[k]
		if t == nil {
			t = &dayTotals{}
			totals[k], keys = t, append(keys, k)
		}
		return t
	}
	for _, c := range calls {
		group(c).add(c)
	}
	seen := map[dayKey]bool{}
	for _, r := range rws {
		if r.inPlace() {
			group(r.new).grow(r.old, r.new)
			continue
		}
		group(r.new).add(r.new)
		if k := dayKeyOf(r.old); !seen[k] {
			seen[k], left = true, append(left, k)
		}
	}
	slices.SortFunc(keys, compareDayKeys)
	slices.SortFunc(left, compareDayKeys)
	return keys, totals, left
}

// upsertCostDays adds the batch's calls, and its rewrites of earlier rows,
// to their days' rows: one row per group, in key order so two writers lock
// rows in one order; then makes again the groups rewritten rows left.
func upsertCostDays(ctx context.Context, tx pgx.Tx, calls []*Call, rws []rewrite) error {
	if len(calls) == 0 && len(rws) == 0 {
		return nil
	}
	keys, totals, left := rollUp(calls, rws)
	n := len(keys)
	text := func() []string { return make([]string, n) }
	org, day, billing, app, model, member, plan, machine := text(), text(), text(), text(), text(), text(), text(), text()
	counts := make([][]int64, 8) // calls, with usage, with cost, then the five token sums
	for i := range counts {
		counts[i] = make([]int64, n)
	}
	cost := make([]*string, n)
	for i, k := range keys {
		org[i], day[i], billing[i], app[i], model[i], member[i], plan[i] = k.Org, k.Day, k.Billing, k.App, k.Model, k.Member, k.Plan
		machine[i] = k.Machine
		t := totals[k]
		counts[0][i], counts[1][i], counts[2][i] = t.calls, t.withUsage, t.withCost
		for j, s := range t.tokens {
			counts[3+j][i] = s
		}
		cost[i] = t.cost.text()
	}
	_, err := tx.Exec(ctx, `INSERT INTO cost_days AS d (org, day, billing, app, served_model, member, plan_id,
			worker_id, calls, calls_with_usage, calls_with_cost, input_tokens, output_tokens, cache_read_tokens,
			cache_write_tokens, reasoning_tokens, cost)
		SELECT * FROM unnest($1::text[], $2::date[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[],
			$8::text[], $9::bigint[], $10::bigint[], $11::bigint[], $12::bigint[], $13::bigint[], $14::bigint[],
			$15::bigint[], $16::bigint[], $17::numeric[])
		ON CONFLICT (org, day, billing, app, served_model, member, plan_id, worker_id) DO UPDATE SET
			calls = d.calls + EXCLUDED.calls,
			calls_with_usage = d.calls_with_usage + EXCLUDED.calls_with_usage,
			calls_with_cost = d.calls_with_cost + EXCLUDED.calls_with_cost,
			input_tokens = least(d.input_tokens::numeric + EXCLUDED.input_tokens, 9223372036854775807)::bigint,
			output_tokens = least(d.output_tokens::numeric + EXCLUDED.output_tokens, 9223372036854775807)::bigint,
			cache_read_tokens = least(d.cache_read_tokens::numeric + EXCLUDED.cache_read_tokens, 9223372036854775807)::bigint,
			cache_write_tokens = least(d.cache_write_tokens::numeric + EXCLUDED.cache_write_tokens, 9223372036854775807)::bigint,
			reasoning_tokens = least(d.reasoning_tokens::numeric + EXCLUDED.reasoning_tokens, 9223372036854775807)::bigint,
			cost = coalesce(d.cost + EXCLUDED.cost, d.cost, EXCLUDED.cost)`,
		execMode, org, day, billing, app, model, member, plan, machine, counts[0], counts[1], counts[2], counts[3], counts[4],
		counts[5], counts[6], counts[7], cost)
	if err != nil {
		return fmt.Errorf("roll up cost days: %w", err)
	}
	return recomputeDays(ctx, tx, left)
}

// decimalSum adds decimals exactly, as PostgreSQL's numeric does: the sum
// has the largest scale (digits after the point) of its terms, so "0.25"
// and "0.75" make "1.00", as sum(total_cost) shows it.
type decimalSum struct {
	n     int
	v     big.Int // the sum times 10^scale
	scale int
}

// add adds a plain decimal (digits, an optional point and sign; what
// streams.CostText writes).
func (d *decimalSum) add(s string) {
	whole, frac, _ := strings.Cut(s, ".")
	var x big.Int
	if _, ok := x.SetString(whole+frac, 10); !ok {
		return // not streams.CostText's output; PostgreSQL refuses it in router_calls first
	}
	switch {
	case len(frac) > d.scale:
		d.v.Mul(&d.v, pow10(len(frac)-d.scale))
		d.scale = len(frac)
	case len(frac) < d.scale:
		x.Mul(&x, pow10(d.scale-len(frac)))
	}
	d.v.Add(&d.v, &x)
	d.n++
}

// text is the sum as numeric reads it; nil when nothing was added.
func (d *decimalSum) text() *string {
	if d.n == 0 {
		return nil
	}
	s := new(big.Int).Abs(&d.v).String()
	if d.scale > 0 {
		if len(s) <= d.scale {
			s = strings.Repeat("0", d.scale-len(s)+1) + s
		}
		s = s[:len(s)-d.scale] + "." + s[len(s)-d.scale:]
	}
	if d.v.Sign() < 0 {
		s = "-" + s
	}
	return &s
}

func pow10(n int) *big.Int {
	return new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(n)), nil)
}
