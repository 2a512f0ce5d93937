package accounting

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/spinehq/spine/streams"
)

// routerCallColumns is every column of router_calls, in scanCall's order.
const routerCallColumns = `session_id, org, member, app, plan_id, worker_id, execution_surface, door, status, billing, billing_signal,
	served_model, served_effort, usage, input_tokens, output_tokens, cache_read_tokens, cache_write_tokens,
	reasoning_tokens, total_cost::float8, started_at, at, total_cost::text`

// CallsOf reads the router-call rows of the owner's sessions among ids, by
// session id. A session without one (it is still running, or is not the
// owner's) is absent from the map. It is the read of a call for provenance
// (package trace) and the pages: one primary-key probe per id (the LATERAL,
// as loadSessions), whatever the table's statistics say.
func CallsOf(ctx context.Context, q streams.Querier, owner streams.Owner, ids []string) (map[string]*Call, error) {
	rows, err := q.Query(ctx, `SELECT c.* FROM unnest($1::text[]) AS u(id),
		LATERAL (SELECT `+routerCallColumns+` FROM router_calls
			WHERE session_id = u.id AND org = $2 AND member = $3 LIMIT 1) c`, execMode, ids, owner.Org, owner.Member)
	return callsBySession(rows, err, "read router calls")
}

// callsByID reads the router-call rows of the sessions among ids, whoever
// owns them: the projector's read of the rows it rewrites (rewrite.go).
func callsByID(ctx context.Context, tx pgx.Tx, ids []string) (map[string]*Call, error) {
	rows, err := tx.Query(ctx, `SELECT `+routerCallColumns+` FROM router_calls WHERE session_id = ANY($1)`, execMode, ids)
	return callsBySession(rows, err, "read router calls to rewrite")
}

// callsBySession collects a query's rows of routerCallColumns by session id.
func callsBySession(rows pgx.Rows, err error, op string) (map[string]*Call, error) {
	if err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	calls, err := pgx.CollectRows(rows, scanCall)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	byID := make(map[string]*Call, len(calls))
	for _, c := range calls {
		byID[c.SessionID] = c
	}
	return byID, nil
}

// scanCall reads a row of routerCallColumns. The token columns are NULL together
// when the app reported no usage, and then Tokens is nil.
func scanCall(r pgx.CollectableRow) (*Call, error) {
	var c Call
	var in, out, cr, cw, rs *int64
	err := r.Scan(&c.SessionID, &c.Org, &c.Member, &c.App, &c.PlanID, &c.WorkerID, &c.ExecutionSurface, &c.Door, &c.Status,
		&c.Billing, &c.BillingSignal, &c.ServedModel, &c.ServedEffort, &c.Usage, &in, &out, &cr, &cw, &rs,
		&c.TotalCost, &c.StartedAt, &c.At, &c.costText)
	if err != nil {
		return nil, err
	}
	if in != nil && out != nil {
		c.Tokens = &Tokens{Input: *in, Output: *out, CacheRead: deref(cr), CacheWrite: deref(cw), Reasoning: deref(rs),
			Total: addCounts(*in, *out)}
	}
	return &c, nil
}

func deref(n *int64) int64 {
	if n == nil {
		return 0
	}
	return *n
}
