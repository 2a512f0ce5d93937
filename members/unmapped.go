package members

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/spinehq/spine/streams"
)

// Unmapped is an identity an ingest token's events carried that no
// mapping named: those events were not recorded.
type Unmapped struct {
	Identity
	FirstSeen time.Time `json:"firstSeen"`
	LastSeen  time.Time `json:"lastSeen"`
	Events    int64     `json:"events"` // refused events that carried it
}

// MaxUnmapped bounds the unmapped identities kept for one org: an ingest
// token sending made-up identities cannot grow the table without bound.
// Past it, identities already listed still count; new ones are not listed.
const MaxUnmapped = 10000

// Execer is what Count needs of a pool or a transaction.
type Execer interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

// Count adds events to each unmapped identity of org, listing the ones
// not yet listed (seen at at), in one round trip.
func Count(ctx context.Context, q Execer, org string, events map[Identity]int64, at time.Time) error {
	if len(events) == 0 {
		return nil
	}
	ids := slices.SortedFunc(maps.Keys(events), compare)
	kinds, values := columns(ids)
	counts := make([]int64, len(ids))
	for i, id := range ids {
		counts[i] = events[id]
	}
	// An identity already listed counts past the cap; a new one is listed
	// only under it.
	_, err := q.Exec(ctx, `INSERT INTO telemetry_unmapped AS u (org, kind, value, first_seen, last_seen, events)
		SELECT $1, i.kind, i.value, $5, $5, i.n FROM unnest($2::text[], $3::text[], $4::bigint[]) AS i(kind, value, n)
		WHERE (SELECT count(*) FROM telemetry_unmapped WHERE org = $1) < $6
			OR EXISTS (SELECT 1 FROM telemetry_unmapped x WHERE x.org = $1 AND x.kind = i.kind AND x.value = i.value)
		ON CONFLICT (org, kind, value) DO UPDATE SET events = u.events + excluded.events,
			last_seen = greatest(u.last_seen, excluded.last_seen)`, org, kinds, values, counts, at.UTC(), MaxUnmapped)
	if err != nil {
		return fmt.Errorf("count unmapped identities: %w", err)
	}
	return nil
}

// compare orders identities by kind, then value (a statement's rows in
// one order, so two counts of one org never wait on each other in a cycle).
func compare(a, b Identity) int {
	return cmp.Or(cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Value, b.Value))
}

// ListUnmapped is org's unmapped identities in (kind, value) order after the
// given one, at most limit (1 to MaxPage); more says whether others follow.
func ListUnmapped(ctx context.Context, q streams.Querier, org string, after Identity, limit int) ([]Unmapped, bool, error) {
	rows, err := q.Query(ctx, `SELECT kind, value, first_seen, last_seen, events FROM telemetry_unmapped
		WHERE org = $1 AND (kind, value) > ($2, $3) ORDER BY kind, value LIMIT $4`,
		org, after.Kind, after.Value, pageSize(limit)+1)
	if err != nil {
		return nil, false, fmt.Errorf("list unmapped identities: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Unmapped, error) {
		var u Unmapped
		err := r.Scan(&u.Kind, &u.Value, &u.FirstSeen, &u.LastSeen, &u.Events)
		return u, err
	})
	if err != nil {
		return nil, false, fmt.Errorf("list unmapped identities: %w", err)
	}
	out, more := cutPage(out, limit)
	return out, more, nil
}
