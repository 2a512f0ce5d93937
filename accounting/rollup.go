package accounting

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spinehq/spine/streams"
)

const day = 24 * time.Hour

// window splits a summary's [from, to) into the whole UTC days cost_days
// answers and at most two partial days at its edges.
type window struct {
	day0, day1 time.Time // whole days [day0, day1); none when !day0.Before(day1)
	edges      []edge
}

// edge is the part [from, to) of one UTC day that a window covers. When the
// day has no call outside that part, the day's cost_days rows are its
// answer; otherwise its calls are read from router_calls (through
// router_calls_org_at, reading only that part).
type edge struct {
	day, from, to time.Time
}

func splitWindow(from, to time.Time) window {
	from, to = from.UTC(), to.UTC()
	d0 := from.Truncate(day) // multiples of a day since the zero time are UTC midnights
	if d0.Before(from) {
		d0 = d0.Add(day)
	}
	d1 := to.Truncate(day)
	if !d0.Before(d1) { // no whole day: one partial day, or the ends of two
		w := window{day0: d0, day1: d0}
		if mid := from.Truncate(day).Add(day); mid.Before(to) {
			return window{day0: d0, day1: d0, edges: []edge{{mid.Add(-day), from, mid}, {mid, mid, to}}}
		}
		w.edges = []edge{{from.Truncate(day), from, to}}
		return w
	}
	w := window{day0: d0, day1: d1}
	if from.Before(d0) {
		w.edges = append(w.edges, edge{d0.Add(-day), from, d0})
	}
	if d1.Before(to) {
		w.edges = append(w.edges, edge{d1, d1, to})
	}
	return w
}

const (
	// dayColumns are cost_days' columns that summaries aggregate.
	dayColumns = `day, billing, app, served_model, member, plan_id, worker_id, calls, calls_with_usage,
		calls_with_cost, input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, reasoning_tokens, cost`
	// callColumns are a router call as a cost_days row of one call.
	callColumns = `(at AT TIME ZONE 'UTC')::date, billing, app, served_model, member, plan_id, worker_id, 1,
		(usage IS NOT NULL)::int, (total_cost IS NOT NULL)::int, input_tokens, output_tokens, cache_read_tokens,
		cache_write_tokens, reasoning_tokens, total_cost`
)

// query builds one statement (so one snapshot) returning the window's rows
// in cost_days' columns; $1 is the org.
func (w window) query(org string) (string, []any) {
	args := []any{org}
	arg := func(v any) string {
		args = append(args, v)
		return fmt.Sprintf("$%d", len(args))
	}
	var parts []string
	if w.day0.Before(w.day1) {
		parts = append(parts, fmt.Sprintf(`SELECT %s FROM cost_days WHERE org = $1 AND day >= %s AND day < %s`,
			dayColumns, arg(w.day0), arg(w.day1)))
	}
	for _, e := range w.edges {
		date, d, from, to, next := arg(e.day), arg(e.day), arg(e.from), arg(e.to), arg(e.day.Add(day)) // date: a date parameter, d a timestamptz
		whole := fmt.Sprintf(`NOT EXISTS (SELECT FROM router_calls WHERE org = $1
			AND (at >= %s AND at < %s OR at >= %s AND at < %s))`, d, from, to, next)
		parts = append(parts,
			fmt.Sprintf(`SELECT %s FROM cost_days WHERE org = $1 AND day = %s AND %s`, dayColumns, date, whole),
			fmt.Sprintf(`SELECT %s FROM router_calls WHERE org = $1 AND at >= %s AND at < %s AND NOT %s`,
				callColumns, from, to, whole))
	}
	return strings.Join(parts, "\n\tUNION ALL\n\t"), args
}

// summaryRows groups the window's calls by key (an SQL expression over
// cost_days' columns) and billing class, in key order (bytewise, as
// sessionRows) after sq.After, with the total of the whole window; an empty
// key reports the total alone.
func summaryRows(ctx context.Context, q streams.Querier, key, org string, sq SummaryQuery) ([]Row, Row, error) {
	isTotal, keyCol, groups, having, order := `grouping(key) = 1`, `key`, `GROUPING SETS ((key, billing), (billing))`,
		``, `1, key COLLATE "C", 3`
	if key == "" {
		key, isTotal, keyCol, groups, order = `NULL`, `true`, `NULL::text`, `billing`, `3`
	}
	rows, args := splitWindow(sq.From, sq.To).query(org)
	if sq.Member != "" {
		args = append(args, sq.Member)
		rows = fmt.Sprintf(`SELECT * FROM (%s) m WHERE member = $%d`, rows, len(args))
	}
	if sq.After != nil && keyCol == `key` {
		args = append(args, *sq.After)
		having = fmt.Sprintf(`HAVING grouping(key) = 1 OR key COLLATE "C" > $%d`, len(args))
	}
	sql := fmt.Sprintf(`SELECT %s, %s, billing, sum(calls)::bigint, sum(calls_with_usage)::bigint,
			sum(calls_with_cost)::bigint, %s, %s, %s, %s, %s, sum(cost)::text
		FROM (SELECT %s AS key, * FROM (%s) c) k
		GROUP BY %s %s ORDER BY %s`, isTotal, keyCol, tokenSum("input_tokens"), tokenSum("output_tokens"),
		tokenSum("cache_read_tokens"), tokenSum("cache_write_tokens"), tokenSum("reasoning_tokens"), key, rows,
		groups, having, order)
	out, total, err := scanReport(q.Query(ctx, sql, args...))
	if err != nil {
		return nil, total, fmt.Errorf("summarize router calls: %w", err)
	}
	return out, total, nil
}
