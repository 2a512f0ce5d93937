package recorder

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/jackc/pgx/v5"

	"github.com/spinehq/spine/streams"
)

// A session id is held by the first owner to claim it (session_owners).
// HTTP ingest claims the id of every start before publishing it, and the
// recorder claims it again when it projects the start, so every recorded
// session's claim survives a rebuild. A claim is never released: an id, once
// used, stays its owner's.

// Batcher is what ClaimSessions needs: a pool, a connection or a transaction.
type Batcher interface {
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
}

// ClaimSessions claims each of starts for its owner where no one holds it
// yet, then returns the owner holding each id of starts and lookups.
// Two callers racing for one id cannot both hold it: the insert settles on
// the primary key, and the read that follows sees whoever won. Ids are
// claimed in sorted order, so two batches never wait on each other in a
// cycle.
func ClaimSessions(ctx context.Context, q Batcher, starts map[string]streams.Owner, lookups []string) (map[string]streams.Owner, error) {
	var c claimRows
	for _, id := range slices.Sorted(maps.Keys(starts)) {
		c.add(id, starts[id])
	}
	all := slices.Compact(slices.Sorted(slices.Values(append(slices.Clone(c.ids), lookups...))))
	var b pgx.Batch
	if len(c.ids) > 0 {
		b.Queue(insertClaims, c.args()...)
	}
	b.Queue(`SELECT session_id, org, member FROM session_owners WHERE session_id = ANY($1)`, all)
	return readClaims(q.SendBatch(ctx, &b), len(c.ids) > 0)
}

// insertClaims claims each id for its owner where no one holds it yet.
const insertClaims = `INSERT INTO session_owners (session_id, org, member)
	SELECT * FROM unnest($1::text[], $2::text[], $3::text[]) ON CONFLICT DO NOTHING`

// claimRows are claims as insertClaims's columns.
type claimRows struct{ ids, orgs, members []string }

func (c *claimRows) add(id string, o streams.Owner) {
	c.ids, c.orgs, c.members = append(c.ids, id), append(c.orgs, o.Org), append(c.members, o.Member)
}

func (c *claimRows) args() []any { return []any{c.ids, c.orgs, c.members} }

func readClaims(br pgx.BatchResults, inserted bool) (map[string]streams.Owner, error) {
	defer br.Close()
	if inserted {
		if _, err := br.Exec(); err != nil {
			return nil, fmt.Errorf("claim sessions: %w", err)
		}
	}
	rows, err := br.Query()
	if err != nil {
		return nil, fmt.Errorf("read session owners: %w", err)
	}
	held := map[string]streams.Owner{}
	for rows.Next() {
		var id string
		var o streams.Owner
		if err := rows.Scan(&id, &o.Org, &o.Member); err != nil {
			return nil, fmt.Errorf("read session owners: %w", err)
		}
		held[id] = o
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read session owners: %w", err)
	}
	return held, br.Close()
}

// claimStarted records the owners of the batch's new sessions (sorted by
// id), where the door has not already.
func claimStarted(ctx context.Context, tx pgx.Tx, fresh []*Session) error {
	var c claimRows
	for _, s := range fresh {
		c.add(s.ID, streams.Owner{Org: s.Org, Member: s.Member})
	}
	if len(c.ids) == 0 {
		return nil
	}
	if _, err := tx.Exec(ctx, insertClaims, c.args()...); err != nil {
		return fmt.Errorf("claim %d sessions: %w", len(c.ids), err)
	}
	return nil
}

// heldBy reads who holds the ids of the batch's starts that have no
// row yet: a claim made at the door for a start not yet projected.
func heldBy(ctx context.Context, tx pgx.Tx, starts []string) (map[string]streams.Owner, error) {
	if len(starts) == 0 {
		return nil, nil
	}
	return ClaimSessions(ctx, tx, nil, starts)
}
