package recorder

import (
	"context"
	"fmt"
	"strconv"

	"github.com/jackc/pgx/v5"

	"github.com/spinehq/spine/streams"
)

// A session's ledger (session_requests) holds each model request its
// telemetry reported, once: the first copy of a (session, request id)
// wins, here and against the table. A telemetry session's usage, cost,
// model and effort are made from it after every batch that adds to it or
// ends the session, by the database's own sums (cost NULL when no request
// reported one, numeric and exact), so a rebuild makes the same row and a
// request that comes after the end still counts on it.

// ledger is the batch's new requests and the sessions whose row follows
// their ledger.
type ledger struct {
	rows [][]any         // session_requests rows, in log order
	seen map[string]bool // session id + "\x00" + request id, in this batch
	sum  map[string]bool // sessions to sum again
}

// request adds a telemetry request to the session's ledger.
func (b *batch) request(s *Session, e *streams.Envelope) {
	t := e.Telemetry
	key := s.ID + "\x00" + t.RequestID
	if b.ledger.seen[key] {
		return
	}
	b.ledger.seen[key] = true
	var tokens [5]*int64
	if u := t.Usage; u != nil {
		tokens = [5]*int64{&u.InputTokens, &u.OutputTokens, &u.CacheReadTokens, &u.CacheWriteTokens, &u.ReasoningTokens}
	}
	b.ledger.rows = append(b.ledger.rows, []any{s.ID, t.RequestID, t.Model, t.Effort, t.QuerySource,
		tokens[0], tokens[1], tokens[2], tokens[3], tokens[4], streams.CostText(t.TotalCost), t.DurationMs, e.At})
	b.sumAgain(s)
}

// sumAgain has a telemetry session's row made from its ledger at flush.
func (b *batch) sumAgain(s *Session) {
	if s.Origin == OriginTelemetry {
		b.ledger.sum[s.ID] = true
	}
}

// writeLedger adds the batch's requests (one statement; a request already
// there keeps its first copy), then sets each telemetry session's usage,
// cost, model and effort from its ledger.
func (b *batch) writeLedger(ctx context.Context) error {
	if len(b.ledger.rows) > 0 {
		cols := columns(b.ledger.rows, 13)
		_, err := b.tx.Exec(ctx, `INSERT INTO session_requests (session_id, request_id, model, effort, query_source,
				input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, reasoning_tokens, cost, duration_ms, at)
			SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::bigint[], $7::bigint[],
				$8::bigint[], $9::bigint[], $10::bigint[], $11::numeric[], $12::bigint[], $13::timestamptz[])
			ON CONFLICT DO NOTHING`, cols...)
		if err != nil {
			return fmt.Errorf("add %d requests to the ledger: %w", len(b.ledger.rows), err)
		}
	}
	return b.sumLedgers(ctx)
}

// columns turns rows of n values into n arrays, one per column.
func columns(rows [][]any, n int) []any {
	cols := make([][]any, n)
	for _, r := range rows {
		for i := range n {
			cols[i] = append(cols[i], r[i])
		}
	}
	out := make([]any, n)
	for i, c := range cols {
		out[i] = c
	}
	return out
}

// sumLedgers sets the row of each session to sum again from its ledger.
// One primary-key range per session (the LATERAL probes, as loadSessions's).
// Of two requests at the same time the latest is the one whose id sorts
// last bytewise, as accounting's row has it, whatever the database's
// collation.
func (b *batch) sumLedgers(ctx context.Context) error {
	if len(b.ledger.sum) == 0 {
		return nil
	}
	ids := make([]string, 0, len(b.ledger.sum))
	for _, s := range b.sortedSessions() {
		if b.ledger.sum[s.ID] && s.Origin == OriginTelemetry {
			ids = append(ids, s.ID)
		}
	}
	rows, err := b.tx.Query(ctx, `SELECT u.id, r.n, r.input, r.output, r.cache_read, r.cache_write, r.reasoning,
			r.cost::text, coalesce(l.model, ''), coalesce(l.effort, '')
		FROM unnest($1::text[]) AS u(id)
		CROSS JOIN LATERAL (SELECT count(input_tokens) AS n, coalesce(sum(input_tokens), 0)::bigint AS input,
			coalesce(sum(output_tokens), 0)::bigint AS output, coalesce(sum(cache_read_tokens), 0)::bigint AS cache_read,
			coalesce(sum(cache_write_tokens), 0)::bigint AS cache_write, coalesce(sum(reasoning_tokens), 0)::bigint AS reasoning,
			sum(cost) AS cost FROM session_requests WHERE session_id = u.id) r
		LEFT JOIN LATERAL (SELECT model, effort FROM session_requests WHERE session_id = u.id
			ORDER BY at DESC, request_id COLLATE "C" DESC LIMIT 1) l ON true`, ids)
	if err != nil {
		return fmt.Errorf("sum the ledgers of %d sessions: %w", len(ids), err)
	}
	sums, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (ledgerSum, error) {
		var l ledgerSum
		u := &l.usage
		err := r.Scan(&l.id, &l.withUsage, &u.InputTokens, &u.OutputTokens, &u.CacheReadTokens, &u.CacheWriteTokens,
			&u.ReasoningTokens, &l.cost, &l.model, &l.effort)
		return l, err
	})
	if err != nil {
		return fmt.Errorf("sum the ledgers of %d sessions: %w", len(ids), err)
	}
	var restamp []*Session
	for _, l := range sums {
		s := b.sessions[l.id]
		changed := s.Model != l.model || s.Effort != l.effort
		l.apply(s)
		if s.Ended() && changed {
			restamp = append(restamp, s)
		}
	}
	return b.restamp(ctx, restamp)
}

// restamp writes producedBy again on what ended telemetry sessions pushed
// when a request told after their end changed their model: the stamp is the
// ledger's latest request, whichever batch the request came in.
func (b *batch) restamp(ctx context.Context, sessions []*Session) error {
	if len(sessions) == 0 {
		return nil
	}
	var ids, bys []string
	for _, s := range sessions {
		ids, bys = append(ids, s.ID), append(bys, producedBy(s))
	}
	_, err := b.tx.Exec(ctx, `UPDATE artifacts a SET produced_by = u.by::jsonb
		FROM unnest($1::text[], $2::text[]) AS u(session_id, by)
		WHERE a.session_id = u.session_id AND a.session_id <> '' AND a.kind <> 'upload' AND a.produced_by IS NOT NULL`,
		pgx.QueryExecModeExec, ids, bys)
	if err != nil {
		return fmt.Errorf("stamp producedBy again on %d sessions: %w", len(ids), err)
	}
	return nil
}

// ledgerSum is one session's ledger, summed.
type ledgerSum struct {
	id            string
	withUsage     int64 // requests that reported usage
	usage         streams.Usage
	cost          *string // the sum of the costs reported, exact; nil when none was
	model, effort string  // the latest request's
}

// apply puts the sums on the session's row: no usage when no request
// reported any, no cost when none reported one.
func (l ledgerSum) apply(s *Session) {
	s.Usage, s.TotalCost = nil, nil
	if l.withUsage > 0 {
		s.Usage = mustJSON(l.usage)
	}
	if l.cost != nil {
		// The shortest float that reads back as the sum: the row's numeric
		// gets the sum's own digits back (streams.CostText).
		if f, err := strconv.ParseFloat(*l.cost, 64); err == nil {
			s.TotalCost = &f
		}
	}
	s.Model, s.Effort, s.dirty = l.model, l.effort, true
}
