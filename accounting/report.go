package accounting

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// Querier is what reports need: a pool, a connection or a transaction.
type Querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// Cell is one billing class's share of a report row. Its classes are never
// added together: metered, subscription and unknown stay apart.
type Cell struct {
	Calls          int64 `json:"calls"`
	CallsWithUsage int64 `json:"callsWithUsage"` // calls whose app reported usage
	CallsWithCost  int64 `json:"callsWithCost"`  // calls whose app reported a cost
	// Tokens sums the calls that reported usage.
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

// aggregate groups the org's router calls matching where (SQL over
// router_calls, with $1 the org and further arguments from args) by key
// (an SQL expression) and billing class.
func aggregate(ctx context.Context, q Querier, key, where string, args ...any) ([]Row, error) {
	sql := fmt.Sprintf(`SELECT %s AS key, billing, count(*), count(usage), count(total_cost),
			coalesce(sum(input_tokens), 0), coalesce(sum(output_tokens), 0), coalesce(sum(cache_read_tokens), 0),
			coalesce(sum(cache_write_tokens), 0), coalesce(sum(reasoning_tokens), 0), sum(total_cost)::text
		FROM router_calls WHERE org = $1 AND %s GROUP BY 1, 2 ORDER BY 1, 2`, key, where)
	rows, err := q.Query(ctx, sql, args...)
	if err != nil {
		return nil, fmt.Errorf("aggregate router calls: %w", err)
	}
	defer rows.Close()
	var out []Row
	for rows.Next() {
		var k, billing string
		var c Cell
		var dollars *string
		t := &c.Tokens
		if err := rows.Scan(&k, &billing, &c.Calls, &c.CallsWithUsage, &c.CallsWithCost, &t.Input, &t.Output,
			&t.CacheRead, &t.CacheWrite, &t.Reasoning, &dollars); err != nil {
			return nil, fmt.Errorf("aggregate router calls: %w", err)
		}
		t.Total = t.Input + t.Output
		if dollars != nil {
			n := json.Number(*dollars)
			c.Dollars = &n
		}
		if len(out) == 0 || out[len(out)-1].Key != k {
			out = append(out, Row{Key: k})
		}
		*out[len(out)-1].Cell(billing) = c
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("aggregate router calls: %w", err)
	}
	return out, nil
}
