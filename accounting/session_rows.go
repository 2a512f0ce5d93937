package accounting

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/spinehq/spine/streams"
)

// sessionRows lists the window's calls for groupBy=session: a session has
// one call, so its row is that call's cell and there is nothing to group.
// Rows come in session id order (bytewise) after sq.After, at most
// sq.Limit+1 of them (every one when sq.Limit is 0), so a caller knows
// whether a page follows; inWindow (the window's calls, from the rollup)
// sizes the result.
//
// A page reads router_calls_org_session in order and stops once it has its
// rows (the plan PostgreSQL picks once router_calls has statistics; a
// never-analysed table looks tiny, and then the window is read by
// router_calls_org_at and sorted). The whole listing reads the window
// unordered and sorts here, which costs less than PostgreSQL sorting every
// row.
func sessionRows(ctx context.Context, q streams.Querier, org string, sq SummaryQuery, inWindow int) ([]Row, error) {
	args := []any{org, sq.From, sq.To}
	sql := `SELECT session_id, billing, usage IS NOT NULL, total_cost IS NOT NULL, coalesce(input_tokens, 0),
			coalesce(output_tokens, 0), coalesce(cache_read_tokens, 0), coalesce(cache_write_tokens, 0),
			coalesce(reasoning_tokens, 0), total_cost::text
		FROM router_calls WHERE org = $1 AND at >= $2 AND at < $3`
	if sq.Member != "" {
		args = append(args, sq.Member)
		sql += fmt.Sprintf(` AND member = $%d`, len(args))
	}
	if sq.After != nil {
		args = append(args, *sq.After)
		sql += fmt.Sprintf(` AND session_id COLLATE "C" > $%d`, len(args))
	}
	expect := inWindow
	if sq.Limit > 0 {
		args = append(args, sq.Limit+1)
		sql += fmt.Sprintf(` ORDER BY session_id COLLATE "C" LIMIT $%d`, len(args))
		expect = min(expect, sq.Limit+1)
	}
	rows, err := q.Query(ctx, sql, args...)
	if err != nil {
		return nil, fmt.Errorf("list session calls: %w", err)
	}
	defer rows.Close()
	calls := make([]sessionCall, 0, max(expect, 0))
	var c sessionCall
	t := &c.tokens
	dest := []any{&c.key, &c.billing, &c.usage, &c.cost, &t.Input, &t.Output, &t.CacheRead, &t.CacheWrite, &t.Reasoning,
		&c.dollars}
	for rows.Next() {
		if err := rows.Scan(dest...); err != nil {
			return nil, fmt.Errorf("list session calls: %w", err)
		}
		calls = append(calls, c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list session calls: %w", err)
	}
	return sessionCallRows(calls, sq.Limit == 0), nil
}

// sessionCall is one row of sessionRows' query, smaller than the Row it
// becomes, so sorting and growing a list of them moves less.
type sessionCall struct {
	key, billing string
	usage, cost  bool
	tokens       Tokens // Total unset
	dollars      *string
}

// sessionCallRows makes a Row of each call, in key order (bytewise) when
// sort is set, else in the calls' order.
func sessionCallRows(calls []sessionCall, sort bool) []Row {
	order := make([]sortKey, len(calls))
	for i := range order {
		order[i] = sortKey{i: int32(i)}
		if sort {
			order[i].prefix = keyPrefix(calls[i].key)
		}
	}
	if sort {
		slices.SortFunc(order, func(a, b sortKey) int {
			if a.prefix != b.prefix {
				return cmp.Compare(a.prefix, b.prefix)
			}
			return strings.Compare(calls[a.i].key, calls[b.i].key)
		})
	}
	out := make([]Row, len(calls))
	dollars := make([]json.Number, len(calls)) // one allocation for every row's
	for i, k := range order {
		c := &calls[k.i]
		cell := Cell{Calls: 1, CallsWithUsage: b2i(c.usage), CallsWithCost: b2i(c.cost), Tokens: c.tokens}
		cell.Tokens.Total = addCounts(c.tokens.Input, c.tokens.Output)
		if c.dollars != nil {
			dollars[i] = json.Number(*c.dollars)
			cell.Dollars = &dollars[i]
		}
		out[i].Key = c.key
		*out[i].Cell(c.billing) = cell
	}
	return out
}

// sortKey orders a call by its key's first eight bytes, then its whole key
// (PostgreSQL's abbreviated keys): most comparisons are of two integers.
type sortKey struct {
	prefix uint64
	i      int32
}

// keyPrefix is the first eight bytes of key, big-endian, zero-padded: keys
// in byte order have prefixes in the same order or equal ones.
func keyPrefix(key string) uint64 {
	var p uint64
	for i := range 8 {
		p <<= 8
		if i < len(key) {
			p |= uint64(key[i])
		}
	}
	return p
}

func b2i(b bool) int64 {
	if b {
		return 1
	}
	return 0
}
