package accounting

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/spinehq/spine/streams"
)

// request is a row of router_call_requests, the ledger of the model
// requests the apps' telemetry reported: one per (session, request id).
type request struct {
	SessionID, RequestID, Org, Member string
	Model, Effort                     string  // as reported; "" = unknown
	Tokens                            *Tokens // normalised; nil = no usage reported
	Cost                              *string // USD as reported; nil = not reported
	At                                time.Time
	// reopen: how often its session had been reopened in this batch when
	// it was reported (reopen.go).
	reopen int
}

// insertRequests adds the batch's requests to the ledger; a request it
// holds already keeps its first copy.
func insertRequests(ctx context.Context, tx pgx.Tx, reqs []*request) error {
	if len(reqs) == 0 {
		return nil
	}
	n := len(reqs)
	text := func() []string { return make([]string, n) }
	id, key, org, member, model, effort := text(), text(), text(), text(), text(), text()
	count := func() []*int64 { return make([]*int64, n) }
	in, out, cr, cw, rs := count(), count(), count(), count(), count()
	cost, at := make([]*string, n), make([]time.Time, n)
	for i, r := range reqs {
		id[i], key[i], org[i], member[i], model[i], effort[i] = r.SessionID, r.RequestID, r.Org, r.Member, r.Model, r.Effort
		if t := r.Tokens; t != nil {
			in[i], out[i], cr[i], cw[i], rs[i] = &t.Input, &t.Output, &t.CacheRead, &t.CacheWrite, &t.Reasoning
		}
		cost[i], at[i] = r.Cost, r.At
	}
	_, err := tx.Exec(ctx, `INSERT INTO router_call_requests (session_id, request_id, org, member, model, effort,
			input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, reasoning_tokens, cost, at)
		SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::bigint[],
			$8::bigint[], $9::bigint[], $10::bigint[], $11::bigint[], $12::numeric[], $13::timestamptz[])
		ON CONFLICT (session_id, request_id) DO NOTHING`,
		execMode, id, key, org, member, model, effort, in, out, cr, cw, rs, cost, at)
	if err != nil {
		return fmt.Errorf("insert telemetry requests: %w", err)
	}
	return nil
}

// ledgerSum is what a telemetry session's requests add up to.
type ledgerSum struct {
	tokens        *Tokens        // by kind, saturating; nil when no request reported usage
	usage         *streams.Usage // the same in the envelope's buckets (input without cache), no raw
	cost          *string        // the exact sum of the reported costs; nil when none reported one
	model, effort string         // the latest request's (by time, then request id)
}

// ledgerSums adds up the requests of each session among ids; a session
// without any is absent.
func ledgerSums(ctx context.Context, tx pgx.Tx, ids []string) (map[string]*ledgerSum, error) {
	const latest = ` ORDER BY at DESC, request_id COLLATE "C" DESC))[1]`
	rows, err := tx.Query(ctx, `SELECT session_id, count(input_tokens), `+tokenSum("input_tokens")+`,
			`+tokenSum("output_tokens")+`, `+tokenSum("cache_read_tokens")+`, `+tokenSum("cache_write_tokens")+`,
			`+tokenSum("reasoning_tokens")+`, `+tokenSum("input_tokens - cache_read_tokens - cache_write_tokens")+`,
			sum(cost)::text, (array_agg(model`+latest+`, (array_agg(effort`+latest+`
		FROM router_call_requests WHERE session_id = ANY($1) GROUP BY session_id`, execMode, ids)
	if err != nil {
		return nil, fmt.Errorf("sum telemetry requests: %w", err)
	}
	defer rows.Close()
	out := map[string]*ledgerSum{}
	for rows.Next() {
		var id string
		var withUsage, uncached int64
		var t Tokens
		l := &ledgerSum{}
		if err := rows.Scan(&id, &withUsage, &t.Input, &t.Output, &t.CacheRead, &t.CacheWrite, &t.Reasoning, &uncached,
			&l.cost, &l.model, &l.effort); err != nil {
			return nil, fmt.Errorf("sum telemetry requests: %w", err)
		}
		if withUsage > 0 {
			t.Total = addCounts(t.Input, t.Output)
			l.tokens = &t
			l.usage = &streams.Usage{InputTokens: uncached, OutputTokens: t.Output, CacheReadTokens: t.CacheRead,
				CacheWriteTokens: t.CacheWrite, ReasoningTokens: t.Reasoning}
		}
		out[id] = l
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sum telemetry requests: %w", err)
	}
	return out, nil
}

// fill sets what a telemetry session's row takes from its requests (l nil:
// none) and its telemetry's billing signal: tokens, usage, cost, the
// served model and effort, billing; door session.
func (l *ledgerSum) fill(c *Call, signal string) {
	if l == nil {
		l = &ledgerSum{}
	}
	c.Door, c.BillingSignal, c.Billing = "session", signal, Billing(l.usage, signal)
	c.ServedModel, c.ServedEffort = l.model, l.effort
	c.Tokens, c.Usage, c.costText, c.TotalCost = l.tokens, nil, l.cost, nil
	if l.usage != nil {
		c.Usage, _ = json.Marshal(l.usage) // numbers only: cannot fail
	}
	if l.cost != nil {
		f, _ := strconv.ParseFloat(*l.cost, 64) // numeric's text: always a number
		c.TotalCost = &f
	}
}
