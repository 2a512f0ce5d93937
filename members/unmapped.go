package members

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/spinehq/spine/streams"
)

// Unmapped is an identity an ingest token's events carried that no
// mapping named, or (kinds Machine and None) what is known of events that
// named no user: those events were not recorded.
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

// Beginner is what Count needs of a pool (or a transaction, for a
// savepoint): a transaction to take the org's lock in.
type Beginner interface {
	Begin(ctx context.Context) (pgx.Tx, error)
}

// unmappedLockNS is the advisory-lock namespace (the int4 pair's first
// key; node presence has 70700) of one org's unmapped identities.
const unmappedLockNS = 70701

// Count adds events to each unmapped identity of org, listing the ones
// not yet listed (seen at at) while the org has room, in one transaction.
// Counts of one org take turns (a transaction-scoped advisory lock), so
// two at once cannot both see the room left and both fill it.
func Count(ctx context.Context, db Beginner, org string, events map[Identity]int64, at time.Time) error {
	if len(events) == 0 {
		return nil
	}
	ids := slices.SortedFunc(maps.Keys(events), compare)
	kinds, values := columns(ids)
	counts := make([]int64, len(ids))
	for i, id := range ids {
		counts[i] = events[id]
	}
	err := pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1::int, hashtext($2))`, unmappedLockNS, org); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, countUnmapped, org, kinds, values, counts, at.UTC(), MaxUnmapped)
		return err
	})
	if err != nil {
		return fmt.Errorf("count unmapped identities: %w", err)
	}
	return nil
}

// countUnmapped counts an identity already listed whatever the cap, and
// lists new ones, in (kind, value) order, only into the room the cap
// leaves: at most greatest(cap - listed, 0) of them.
const countUnmapped = `WITH i AS (
		SELECT kind, value, n FROM unnest($2::text[], $3::text[], $4::bigint[]) AS i(kind, value, n)),
	listed AS (
		UPDATE telemetry_unmapped u SET events = u.events + i.n, last_seen = greatest(u.last_seen, $5)
		FROM i WHERE u.org = $1 AND u.kind = i.kind AND u.value = i.value RETURNING u.kind, u.value)
	INSERT INTO telemetry_unmapped (org, kind, value, first_seen, last_seen, events)
	SELECT $1, i.kind, i.value, $5, $5, i.n FROM i
	WHERE NOT EXISTS (SELECT 1 FROM listed l WHERE l.kind = i.kind AND l.value = i.value)
	ORDER BY i.kind, i.value
	LIMIT greatest($6 - (SELECT count(*) FROM telemetry_unmapped WHERE org = $1), 0)`

// compare orders identities by kind, then value (a statement's rows in
// one order).
func compare(a, b Identity) int {
	return cmp.Or(cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Value, b.Value))
}

// ListUnmapped is org's unmapped identities in (kind, value) order after the
// given one, at most limit (1 to MaxPage); more says whether others follow.
func ListUnmapped(ctx context.Context, q streams.Querier, org string, after Identity, limit int) ([]Unmapped, bool, error) {
	return listPage(ctx, q, "unmapped identities", `SELECT kind, value, first_seen, last_seen, events FROM telemetry_unmapped
		WHERE org = $1 AND (kind, value) > ($2, $3) ORDER BY kind, value LIMIT $4`, org, after, limit,
		func(r pgx.CollectableRow) (Unmapped, error) {
			var u Unmapped
			err := r.Scan(&u.Kind, &u.Value, &u.FirstSeen, &u.LastSeen, &u.Events)
			return u, err
		})
}
