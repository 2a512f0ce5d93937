package accounting

import (
	"context"
	"encoding/json"
	"fmt"
	"math"

	"github.com/jackc/pgx/v5"

	"github.com/spinehq/spine/streams"
)

// Cell is one billing class's share of a report row. Its classes are never
// added together: metered, subscription and unknown stay apart.
type Cell struct {
	Calls          int64 `json:"calls"`
	CallsWithUsage int64 `json:"callsWithUsage"` // calls whose app reported usage
	CallsWithCost  int64 `json:"callsWithCost"`  // calls whose app reported a cost
	// Tokens sums the calls that reported usage; a sum past 2^63-1 (over
	// nine thousand calls of a quadrillion tokens) saturates there.
	Tokens Tokens `json:"tokens"`
	// Dollars sums the reported costs, exactly; null when no call in the
	// cell reported one (unknown, never 0). When CallsWithCost < Calls the
	// sum covers only the calls that reported.
	Dollars *json.Number `json:"dollars"`
}

// Row is one group of a report, with a cell per billing class.
type Row struct {
	Key          string `json:"key"`
	Metered      Cell   `json:"metered"`
	Subscription Cell   `json:"subscription"`
	Unknown      Cell   `json:"unknown"`
}

// Cell returns the row's cell for a billing class.
func (r *Row) Cell(billing string) *Cell {
	switch billing {
	case BillingMetered:
		return &r.Metered
	case BillingSubscription:
		return &r.Subscription
	}
	return &r.Unknown
}

// addCounts adds token counts, saturating at math.MaxInt64 rather than
// wrapping to a negative number.
func addCounts(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// tokenSum sums a token column of the calls that reported usage. The sum
// of bigints is a numeric, which saturates at the largest bigint rather than
// failing the report.
func tokenSum(column string) string {
	return fmt.Sprintf(`least(coalesce(sum(%s), 0), 9223372036854775807)::bigint`, column)
}

// aggregate groups the org's router calls matching where (SQL over
// router_calls, with $1 the org and further arguments from args) by key
// (an SQL expression) and billing class.
func aggregate(ctx context.Context, q streams.Querier, key, where string, args ...any) ([]Row, error) {
	sql := fmt.Sprintf(`SELECT false, %s AS key, billing, count(*), count(usage), count(total_cost),
			%s, %s, %s, %s, %s, sum(total_cost)::text
		FROM router_calls WHERE org = $1 AND %s GROUP BY 2, 3 ORDER BY 2, 3`, key, tokenSum("input_tokens"),
		tokenSum("output_tokens"), tokenSum("cache_read_tokens"), tokenSum("cache_write_tokens"),
		tokenSum("reasoning_tokens"), where)
	rows, _, err := scanReport(q.Query(ctx, sql, args...))
	if err != nil {
		return nil, fmt.Errorf("aggregate router calls: %w", err)
	}
	return rows, nil
}

// scanReport reads a report query's rows: is it the total, key, billing
// class, the cell's three counts, five token sums and dollars as text, in
// key then billing order with the total's rows last. The total is a zero
// row keyed "total" when there is none.
func scanReport(rows pgx.Rows, err error) ([]Row, Row, error) {
	total := Row{Key: "total"}
	if err != nil {
		return nil, total, err
	}
	defer rows.Close()
	var out []Row
	var isTotal bool
	var key *string
	var billing string
	var c Cell
	var dollars *string
	t := &c.Tokens
	dest := []any{&isTotal, &key, &billing, &c.Calls, &c.CallsWithUsage, &c.CallsWithCost, &t.Input, &t.Output,
		&t.CacheRead, &t.CacheWrite, &t.Reasoning, &dollars}
	for rows.Next() {
		if err := rows.Scan(dest...); err != nil {
			return nil, total, err
		}
		t.Total = addCounts(t.Input, t.Output)
		c.Dollars = nil
		if dollars != nil {
			n := json.Number(*dollars)
			c.Dollars = &n
		}
		switch {
		case isTotal:
			*total.Cell(billing) = c
			continue
		case len(out) == 0 || out[len(out)-1].Key != *key:
			out = append(out, Row{Key: *key})
		}
		*out[len(out)-1].Cell(billing) = c
	}
	return out, total, rows.Err()
}
