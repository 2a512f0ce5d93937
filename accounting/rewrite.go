package accounting

import (
	"context"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
)

// A router-call row is written once, at its session's end, and written
// again only for a telemetry session: its requests keep coming after it
// (exporters batch, so Claude Code's last export arrives after its
// SessionEnd), or a door's start reopened it and that door's end is its
// row now (reopen.go; docs/accounting.md#telemetry-sessions). The row
// takes the new sums or the end's, and cost_days follows it in the same
// transaction, so the rollup stays what aggregating router_calls gives.

// rewrite is a row of an earlier batch and what it becomes.
type rewrite struct{ old, new *Call }

// inPlace reports whether the row stays in its cost_days group and only
// grows there. Then the group takes the difference, exactly: the new cost,
// a sum over more requests, has at least the old one's scale (a numeric
// sum has its terms' largest), and a saturated token sum stays saturated.
// Otherwise the row leaves its old group, which recomputeDays makes again
// from router_calls: a group's sum cannot give back a scale or a
// saturation, nor turn to NULL when its last cost goes.
func (r rewrite) inPlace() bool {
	if dayKeyOf(r.old) != dayKeyOf(r.new) || r.old.Usage != nil && r.new.Usage == nil {
		return false
	}
	ot, nt := tokenCounts(r.old.Tokens), tokenCounts(r.new.Tokens)
	for i := range ot {
		if nt[i] < ot[i] {
			return false
		}
	}
	oc, nc := r.old.cost(), r.new.cost()
	return oc == nil || nc != nil && decimalScale(*nc) >= decimalScale(*oc)
}

// changed reports whether the rewrite changes anything a report reads.
func (r rewrite) changed() bool {
	o, n := r.old, r.new
	oc, nc := o.cost(), n.cost()
	return tokenCounts(o.Tokens) != tokenCounts(n.Tokens) || (o.Tokens == nil) != (n.Tokens == nil) ||
		(oc == nil) != (nc == nil) || oc != nil && *oc != *nc || o.ServedModel != n.ServedModel ||
		o.ServedEffort != n.ServedEffort || o.Billing != n.Billing || o.BillingSignal != n.BillingSignal
}

// tokenCounts are a row's five counts (zeros without usage), in cost_days'
// order: input, output, cache read, cache write, reasoning.
func tokenCounts(t *Tokens) [5]int64 {
	if t == nil {
		return [5]int64{}
	}
	return [5]int64{t.Input, t.Output, t.CacheRead, t.CacheWrite, t.Reasoning}
}

// decimalScale is how many digits a plain decimal has after its point.
func decimalScale(s string) int {
	_, frac, _ := strings.Cut(s, ".")
	return len(frac)
}

// updateCalls writes the rewritten rows, every column but the session and
// its owner: a door's end that replaces its telemetry's row has its own
// status, times, door, plan and machine.
func updateCalls(ctx context.Context, tx pgx.Tx, rws []rewrite) error {
	if len(rws) == 0 {
		return nil
	}
	calls := make([]*Call, len(rws))
	for i, r := range rws {
		calls[i] = r.new
	}
	a := callArrays(calls)
	_, err := tx.Exec(ctx, `UPDATE router_calls r SET app = u.app, plan_id = u.plan, execution_surface = u.surface,
			door = u.door, status = u.status, billing = u.billing, billing_signal = u.signal,
			served_model = u.model, served_effort = u.effort, usage = u.usage, input_tokens = u.input,
			output_tokens = u.output, cache_read_tokens = u.cache_read, cache_write_tokens = u.cache_write,
			reasoning_tokens = u.reasoning, total_cost = u.cost, started_at = u.started_at, at = u.at,
			worker_id = u.worker
		FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[],
			$8::text[], $9::text[], $10::text[], $11::jsonb[], $12::bigint[], $13::bigint[], $14::bigint[],
			$15::bigint[], $16::bigint[], $17::numeric[], $18::timestamptz[], $19::timestamptz[], $20::text[])
			u(id, app, plan, surface, door, status, billing, signal, model, effort, usage, input, output, cache_read,
				cache_write, reasoning, cost, started_at, at, worker)
		WHERE r.session_id = u.id AND r.session_id = ANY($1::text[])`,
		execMode, a.id, a.app, a.plan, a.surface, a.door, a.status, a.billing, a.signal, a.model, a.effort, a.usage,
		a.in, a.out, a.cr, a.cw, a.rs, a.cost, a.startedAt, a.at, a.worker)
	if err != nil {
		return fmt.Errorf("rewrite router calls: %w", err)
	}
	return nil
}

// recomputeDays makes the given cost_days groups again from router_calls:
// the groups rewritten rows left. A group with no call left goes. Groups
// are written in key order, as upsertCostDays writes them.
func recomputeDays(ctx context.Context, tx pgx.Tx, keys []dayKey) error {
	if len(keys) == 0 {
		return nil
	}
	n := len(keys)
	text := func() []string { return make([]string, n) }
	org, dayText, billing, app, model, member, plan, machine := text(), text(), text(), text(), text(), text(), text(), text()
	for i, k := range keys {
		org[i], dayText[i], billing[i], app[i], model[i], member[i], plan[i], machine[i] = k.Org, k.Day, k.Billing,
			k.App, k.Model, k.Member, k.Plan, k.Machine
	}
	// A group's calls are read through router_calls_org_at, its org's calls
	// of its day, which the rest of the key filters.
	_, err := tx.Exec(ctx, `WITH k AS (
			SELECT * FROM unnest($1::text[], $2::date[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[],
				$8::text[]) AS k(org, day, billing, app, served_model, member, plan_id, worker_id)),
		fresh AS (SELECT k.*, g.* FROM k CROSS JOIN LATERAL (
			SELECT count(*) AS calls, count(usage) AS calls_with_usage, count(total_cost) AS calls_with_cost,
				`+tokenSum("input_tokens")+` AS input_tokens, `+tokenSum("output_tokens")+` AS output_tokens,
				`+tokenSum("cache_read_tokens")+` AS cache_read_tokens,
				`+tokenSum("cache_write_tokens")+` AS cache_write_tokens,
				`+tokenSum("reasoning_tokens")+` AS reasoning_tokens, sum(total_cost) AS cost
			FROM router_calls r WHERE r.org = k.org AND r.at >= k.day::timestamp AT TIME ZONE 'UTC'
				AND r.at < (k.day + 1)::timestamp AT TIME ZONE 'UTC' AND r.billing = k.billing AND r.app = k.app
				AND r.served_model = k.served_model AND r.member = k.member AND r.plan_id = k.plan_id
				AND r.worker_id = k.worker_id) g),
		gone AS (DELETE FROM cost_days d USING fresh f WHERE f.calls = 0 AND (d.org, d.day, d.billing, d.app,
			d.served_model, d.member, d.plan_id, d.worker_id) = (f.org, f.day, f.billing, f.app, f.served_model,
			f.member, f.plan_id, f.worker_id))
		INSERT INTO cost_days (org, day, billing, app, served_model, member, plan_id, worker_id, calls,
			calls_with_usage, calls_with_cost, input_tokens, output_tokens, cache_read_tokens, cache_write_tokens,
			reasoning_tokens, cost)
		SELECT * FROM fresh WHERE calls > 0 ORDER BY org, day, billing, app, served_model, member, plan_id, worker_id
		ON CONFLICT (org, day, billing, app, served_model, member, plan_id, worker_id) DO UPDATE SET
			calls = EXCLUDED.calls, calls_with_usage = EXCLUDED.calls_with_usage,
			calls_with_cost = EXCLUDED.calls_with_cost, input_tokens = EXCLUDED.input_tokens,
			output_tokens = EXCLUDED.output_tokens, cache_read_tokens = EXCLUDED.cache_read_tokens,
			cache_write_tokens = EXCLUDED.cache_write_tokens, reasoning_tokens = EXCLUDED.reasoning_tokens,
			cost = EXCLUDED.cost`,
		execMode, org, dayText, billing, app, model, member, plan, machine)
	if err != nil {
		return fmt.Errorf("recompute cost days: %w", err)
	}
	return nil
}
