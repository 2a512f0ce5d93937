// Package checksum computes a canonical checksum of spine's projections: one
// digest per table over its rows in primary-key order. Two databases with
// equal checksums hold the same projections, whatever order they were
// written in; crash tests and `spine rebuild --verify` compare them.
package checksum

import (
	"context"
	"fmt"
	"sort"

	"github.com/jackc/pgx/v5"

	"github.com/spinehq/spine/streams"
)

// Tables are the projection tables and the order their rows are hashed in.
var Tables = map[string]string{
	"sessions":              "id",
	"session_chunks":        "session_id, seq",
	"session_requests":      "session_id, request_id",
	"runs":                  "id",
	"steps":                 "run_id, idx",
	"observations":          "run_id, idx",
	"library_files":         "digest",
	"library_pieces":        "digest, idx",
	"artifacts":             "id",
	"dead_letters":          "stream, seq",
	"accounting_sessions":   "session_id",
	"router_calls":          "session_id",
	"router_call_requests":  "session_id, request_id",
	"plan_budgets":          "org, plan_id",
	"cost_days":             "org, day, billing, app, served_model, member, plan_id, worker_id",
	"desktop_tasks":         "id",
	"desktop_task_events":   "remote_session_id, pos",
	"desktop_task_sessions": "session_id",
	"desktop_runners":       "id",
	"remote_sessions":       "id",
	"projector_checkpoints": "name",
}

// Compute returns table name → md5 of its rows' text in key order, plus the
// row count ("n:md5").
func Compute(ctx context.Context, q streams.Querier) (map[string]string, error) {
	out := make(map[string]string, len(Tables))
	for _, t := range names() {
		var n int64
		var sum string
		sql := fmt.Sprintf(`SELECT count(*), coalesce(md5(string_agg(t::text, E'\n' ORDER BY %s)), '') FROM %s t`,
			Tables[t], pgx.Identifier{t}.Sanitize())
		if err := q.QueryRow(ctx, sql).Scan(&n, &sum); err != nil {
			return nil, fmt.Errorf("checksum %s: %w", t, err)
		}
		out[t] = fmt.Sprintf("%d:%s", n, sum)
	}
	return out, nil
}

// Diff lists the tables whose checksums differ.
func Diff(a, b map[string]string) []string {
	var d []string
	for _, t := range names() {
		_, inA := a[t]
		_, inB := b[t]
		if (inA || inB) && a[t] != b[t] {
			d = append(d, t)
		}
	}
	return d
}

func names() []string {
	n := make([]string, 0, len(Tables))
	for t := range Tables {
		n = append(n, t)
	}
	sort.Strings(n)
	return n
}

// NotRebuilt are tables Compute covers that a rebuild into another database
// does not reproduce: checkpoints name the rebuild's own consumers, and the
// Library's content store is immutable bytes keyed by digest, kept where it
// is rather than re-sent (a rebuilt database holds the content that arrived
// inside events, not uploads' bytes).
var NotRebuilt = []string{"projector_checkpoints", "library_files", "library_pieces"}

// Projections is Compute without the NotRebuilt tables.
func Projections(ctx context.Context, q streams.Querier) (map[string]string, error) {
	all, err := Compute(ctx, q)
	if err != nil {
		return nil, err
	}
	for _, t := range NotRebuilt {
		delete(all, t)
	}
	return all, nil
}
