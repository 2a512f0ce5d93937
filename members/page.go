package members

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/spinehq/spine/streams"
)

// MaxPage bounds one page of List or ListUnmapped (the API's page limit).
const MaxPage = 5000

// listPage reads one page of org's rows with query, which takes the org,
// the cursor's kind and value and a limit ($1 to $4) and lists rows in
// (kind, value) order after the cursor; more says whether others follow.
// what names the rows in an error.
func listPage[T any](ctx context.Context, q streams.Querier, what, query, org string, after Identity, limit int,
	scan func(pgx.CollectableRow) (T, error)) ([]T, bool, error) {
	rows, err := q.Query(ctx, query, org, after.Kind, after.Value, pageSize(limit)+1)
	if err != nil {
		return nil, false, fmt.Errorf("list %s: %w", what, err)
	}
	out, err := pgx.CollectRows(rows, scan)
	if err != nil {
		return nil, false, fmt.Errorf("list %s: %w", what, err)
	}
	if n := pageSize(limit); len(out) > n {
		return out[:n], true, nil // the row past the page says more follow
	}
	return out, false, nil
}

func pageSize(limit int) int { return min(max(limit, 1), MaxPage) }
