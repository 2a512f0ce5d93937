package accounting

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/spinehq/spine/streams"
)

// Every statement of a batch runs with pgx.QueryExecModeExec: an unnamed
// statement that PostgreSQL plans with the batch's own values. A cached
// prepared statement soon gets a generic plan, and one made while the tables
// were nearly empty scans them for each id of an `= ANY($1)`, so a batch
// cost grew with the table.
const execMode = pgx.QueryExecModeExec

// flush writes the batch's requests, sessions, router calls, their days'
// rollup and budgets: one statement per kind, each over arrays of the
// batch's rows. The requests go first: telemetry sessions' rows are their
// sums (but not of the requests after a start reopened their session,
// which go in after).
func (b *batch) flush(ctx context.Context) error {
	counted, after := b.requestsByReopen()
	if err := insertRequests(ctx, b.tx, counted); err != nil {
		return err
	}
	if err := b.telemetryRows(ctx); err != nil {
		return err
	}
	if err := insertRequests(ctx, b.tx, after); err != nil {
		return err
	}
	var started, changed []*session
	for _, s := range b.sorted() {
		switch {
		case s.isNew:
			started = append(started, s)
		case s.changed:
			changed = append(changed, s)
		}
	}
	if err := insertSessions(ctx, b.tx, started); err != nil {
		return err
	}
	if err := updateSessions(ctx, b.tx, changed); err != nil {
		return err
	}
	if err := insertCalls(ctx, b.tx, b.calls); err != nil {
		return err
	}
	if err := updateCalls(ctx, b.tx, b.rewrites); err != nil {
		return err
	}
	if err := upsertCostDays(ctx, b.tx, b.calls, b.rewrites); err != nil {
		return err
	}
	return upsertBudgets(ctx, b.tx, b.budgets)
}

// sessionArrays are sessions column by column, in sessionColumns' order,
// as the set-based statements take them.
func sessionArrays(ss []*session) []any {
	n := len(ss)
	text := func() []string { return make([]string, n) }
	id, org, member, app, plan, worker, origin, signal := text(), text(), text(), text(), text(), text(), text(), text()
	startedAt, endedAt := make([]time.Time, n), make([]*time.Time, n)
	usage, cost, reopened, swept := make([]*string, n), make([]*float64, n), make([]bool, n), make([]bool, n)
	for i, s := range ss {
		id[i], org[i], member[i], app[i], plan[i], worker[i] = s.ID, s.Org, s.Member, s.App, s.PlanID, s.WorkerID
		startedAt[i], endedAt[i] = s.StartedAt, s.EndedAt
		usage[i], cost[i] = usageText(s.Usage), s.TotalCost
		origin[i], signal[i], reopened[i], swept[i] = s.Origin, s.BillingSignal, s.Reopened, s.Swept
	}
	return []any{id, org, member, app, plan, worker, startedAt, endedAt, usage, cost, origin, signal, reopened, swept}
}

// insertSessions writes the sessions that started in the batch (ended_at
// set when they also ended in it).
func insertSessions(ctx context.Context, tx pgx.Tx, ss []*session) error {
	if len(ss) == 0 {
		return nil
	}
	_, err := tx.Exec(ctx, `INSERT INTO accounting_sessions (session_id, org, member, app, plan_id, worker_id,
			started_at, ended_at, usage, total_cost, origin, billing_signal, reopened, swept)
		SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[],
			$7::timestamptz[], $8::timestamptz[], $9::jsonb[], $10::numeric[], $11::text[], $12::text[], $13::bool[],
			$14::bool[])`,
		append([]any{execMode}, sessionArrays(ss)...)...)
	if err != nil {
		return fmt.Errorf("insert accounting sessions: %w", err)
	}
	return nil
}

// updateSessions writes back the sessions of earlier batches that this one
// changed: ended, reported usage running, claimed or reopened by a start,
// or named a billing in their telemetry. Owner and id never change.
func updateSessions(ctx context.Context, tx pgx.Tx, ss []*session) error {
	if len(ss) == 0 {
		return nil
	}
	// The = ANY names the rows to the planner, which reads them from the
	// primary key; joined with the unnest alone it hashes the batch and
	// scans the whole table.
	_, err := tx.Exec(ctx, `UPDATE accounting_sessions a SET app = u.app, plan_id = u.plan_id,
			worker_id = u.worker_id, started_at = u.started_at, ended_at = u.ended_at, usage = u.usage,
			total_cost = u.total_cost, origin = u.origin, billing_signal = u.billing_signal, reopened = u.reopened,
			swept = u.swept
		FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[],
			$7::timestamptz[], $8::timestamptz[], $9::jsonb[], $10::numeric[], $11::text[], $12::text[], $13::bool[],
			$14::bool[])
			u(id, org, member, app, plan_id, worker_id, started_at, ended_at, usage, total_cost, origin, billing_signal,
				reopened, swept)
		WHERE a.session_id = u.id AND a.session_id = ANY($1::text[])`, append([]any{execMode}, sessionArrays(ss)...)...)
	if err != nil {
		return fmt.Errorf("update accounting sessions: %w", err)
	}
	return nil
}

// usageText is a usage as jsonb text; nil for none.
func usageText(u *streams.Usage) *string {
	if u == nil {
		return nil
	}
	data, _ := json.Marshal(u) // numbers and raw JSON: cannot fail
	s := jsonbText(data)
	return &s
}

// insertCalls writes the batch's router-call rows.
func insertCalls(ctx context.Context, tx pgx.Tx, calls []*Call) error {
	if len(calls) == 0 {
		return nil
	}
	a := callArrays(calls)
	_, err := tx.Exec(ctx, `INSERT INTO router_calls (session_id, org, member, app, plan_id, execution_surface, door,
			status, billing, billing_signal, served_model, served_effort, usage, input_tokens, output_tokens,
			cache_read_tokens, cache_write_tokens, reasoning_tokens, total_cost, started_at, at, worker_id)
		SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[],
			$8::text[], $9::text[], $10::text[], $11::text[], $12::text[], $13::jsonb[], $14::bigint[], $15::bigint[],
			$16::bigint[], $17::bigint[], $18::bigint[], $19::numeric[], $20::timestamptz[], $21::timestamptz[],
			$22::text[])`,
		execMode, a.id, a.org, a.member, a.app, a.plan, a.surface, a.door, a.status, a.billing, a.signal, a.model,
		a.effort, a.usage, a.in, a.out, a.cr, a.cw, a.rs, a.cost, a.startedAt, a.at, a.worker)
	if err != nil {
		return fmt.Errorf("insert router calls: %w", err)
	}
	return nil
}

// callColumnArrays are router-call rows column by column, as the set-based
// statements take them.
type callColumnArrays struct {
	id, org, member, app, plan, surface, door, status []string
	billing, signal, model, effort, worker            []string
	usage, cost                                       []*string
	in, out, cr, cw, rs                               []*int64
	startedAt, at                                     []time.Time
}

func callArrays(calls []*Call) *callColumnArrays {
	n := len(calls)
	text := func() []string { return make([]string, n) }
	count := func() []*int64 { return make([]*int64, n) }
	a := &callColumnArrays{id: text(), org: text(), member: text(), app: text(), plan: text(), surface: text(),
		door: text(), status: text(), billing: text(), signal: text(), model: text(), effort: text(), worker: text(),
		usage: make([]*string, n), cost: make([]*string, n), in: count(), out: count(), cr: count(), cw: count(),
		rs: count(), startedAt: make([]time.Time, n), at: make([]time.Time, n)}
	for i, c := range calls {
		a.id[i], a.org[i], a.member[i], a.app[i], a.plan[i] = c.SessionID, c.Org, c.Member, c.App, c.PlanID
		a.surface[i], a.door[i], a.status[i], a.billing[i], a.signal[i] = c.ExecutionSurface, c.Door, c.Status, c.Billing, c.BillingSignal
		a.model[i], a.effort[i], a.worker[i] = c.ServedModel, c.ServedEffort, c.WorkerID
		if t := c.Tokens; t != nil {
			a.in[i], a.out[i], a.cr[i], a.cw[i], a.rs[i] = &t.Input, &t.Output, &t.CacheRead, &t.CacheWrite, &t.Reasoning
		}
		if c.Usage != nil {
			u := jsonbText(c.Usage)
			a.usage[i] = &u
		}
		a.cost[i] = c.cost()
		a.startedAt[i], a.at[i] = c.StartedAt, c.At
	}
	return a
}

// upsertBudgets sets each plan's budget to its latest event in the batch
// (as applying them one by one would), plans in key order so concurrent
// writers lock rows in one order.
func upsertBudgets(ctx context.Context, tx pgx.Tx, budgets []*Budget) error {
	if len(budgets) == 0 {
		return nil
	}
	latest := map[[2]string]*Budget{}
	for _, bu := range budgets {
		latest[[2]string{bu.Org, bu.PlanID}] = bu
	}
	keys := make([][2]string, 0, len(latest))
	for k := range latest {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(x, y [2]string) int { return cmp.Or(cmp.Compare(x[0], y[0]), cmp.Compare(x[1], y[1])) })
	n := len(keys)
	org, plan, setBy := make([]string, n), make([]string, n), make([]string, n)
	ceiling, loop, setAt := make([]*string, n), make([]*int64, n), make([]time.Time, n)
	for i, k := range keys {
		bu := latest[k]
		org[i], plan[i], setBy[i] = bu.Org, bu.PlanID, bu.Member
		ceiling[i], loop[i], setAt[i] = numberArg(bu), bu.LoopCap, bu.At
	}
	_, err := tx.Exec(ctx, `INSERT INTO plan_budgets (org, plan_id, dollar_ceiling, loop_cap, set_by, set_at)
		SELECT * FROM unnest($1::text[], $2::text[], $3::numeric[], $4::bigint[], $5::text[], $6::timestamptz[])
		ON CONFLICT (org, plan_id) DO UPDATE SET dollar_ceiling = EXCLUDED.dollar_ceiling,
			loop_cap = EXCLUDED.loop_cap, set_by = EXCLUDED.set_by, set_at = EXCLUDED.set_at`,
		execMode, org, plan, ceiling, loop, setBy, setAt)
	if err != nil {
		return fmt.Errorf("write plan budgets: %w", err)
	}
	return nil
}

func numberArg(b *Budget) *string {
	if b.DollarCeiling == nil {
		return nil
	}
	s := string(*b.DollarCeiling)
	return &s
}

// jsonbText makes JSON acceptable to jsonb, which refuses the NUL
// character: an escaped NUL becomes U+FFFD rather than failing the batch
// (and so blocking the stream) forever.
func jsonbText(raw []byte) string {
	return strings.ReplaceAll(string(raw), `\u0000`, `\ufffd`)
}
