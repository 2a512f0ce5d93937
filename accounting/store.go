package accounting

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
)

// flush writes the batch's sessions, router calls and budgets in one round
// trip.
func (b *batch) flush(ctx context.Context) error {
	q := &pgx.Batch{}
	for _, s := range b.sorted() {
		if s.isNew {
			q.Queue(`INSERT INTO accounting_sessions (`+sessionColumns+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
				s.ID, s.Org, s.Member, s.App, s.PlanID, s.WorkerID, s.StartedAt, s.EndedAt)
		}
	}
	for _, c := range b.calls {
		if !b.sessions[c.SessionID].isNew {
			q.Queue(`UPDATE accounting_sessions SET ended_at = $2 WHERE session_id = $1`, c.SessionID, c.At)
		}
		queueCall(q, c)
	}
	for _, bu := range b.budgets {
		q.Queue(`INSERT INTO plan_budgets (org, plan_id, dollar_ceiling, loop_cap, set_by, set_at)
			VALUES ($1, $2, $3::numeric, $4, $5, $6)
			ON CONFLICT (org, plan_id) DO UPDATE SET dollar_ceiling = EXCLUDED.dollar_ceiling,
				loop_cap = EXCLUDED.loop_cap, set_by = EXCLUDED.set_by, set_at = EXCLUDED.set_at`,
			bu.Org, bu.PlanID, numberArg(bu), bu.LoopCap, bu.Member, bu.At)
	}
	if q.Len() == 0 {
		return nil
	}
	if err := b.tx.SendBatch(ctx, q).Close(); err != nil {
		return fmt.Errorf("write accounting batch: %w", err)
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

func queueCall(q *pgx.Batch, c *Call) {
	var in, out, cr, cw, rs *int64
	if t := c.Tokens; t != nil {
		in, out, cr, cw, rs = &t.Input, &t.Output, &t.CacheRead, &t.CacheWrite, &t.Reasoning
	}
	var usage any
	if c.Usage != nil {
		usage = jsonbText(c.Usage)
	}
	q.Queue(`INSERT INTO router_calls (session_id, org, member, app, plan_id, execution_surface, door, status,
			billing, billing_signal, served_model, served_effort, usage, input_tokens, output_tokens,
			cache_read_tokens, cache_write_tokens, reasoning_tokens, total_cost, started_at, at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13::jsonb, $14, $15, $16, $17, $18, $19::numeric, $20, $21)`,
		c.SessionID, c.Org, c.Member, c.App, c.PlanID, c.ExecutionSurface, c.Door, c.Status, c.Billing,
		c.BillingSignal, c.ServedModel, c.ServedEffort, usage, in, out, cr, cw, rs, costArg(c.TotalCost), c.StartedAt, c.At)
}

// costArg is a reported cost as the shortest decimal that reads back as the
// same float, so numeric stores what the app said and not a binary artefact.
func costArg(f *float64) *string {
	if f == nil {
		return nil
	}
	s := strconv.FormatFloat(*f, 'f', -1, 64)
	return &s
}

// jsonbText makes JSON acceptable to jsonb, which refuses the NUL
// character: an escaped NUL becomes U+FFFD rather than failing the batch
// (and so blocking the stream) forever.
func jsonbText(raw []byte) string {
	return strings.ReplaceAll(string(raw), `\u0000`, `\ufffd`)
}
