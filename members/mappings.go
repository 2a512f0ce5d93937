package members

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/spinehq/spine/streams"
)

// Mapping is an identity an admin mapped to a member.
type Mapping struct {
	Identity
	Member   string    `json:"member"`
	MappedBy string    `json:"mappedBy"` // the admin who mapped it
	MappedAt time.Time `json:"mappedAt"`
}

// Map maps id to member in org, replacing what it mapped to before, and
// forgets it as unmapped: events that carry it from now on are member's.
// Events refused before stay unrecorded (the door does not keep them).
func Map(ctx context.Context, pool *pgxpool.Pool, org string, id Identity, member, by string, at time.Time) (*Mapping, error) {
	if _, err := Parse(id.Kind, id.Value); err != nil {
		return nil, err
	}
	if !streams.ValidOwnerID(member) {
		return nil, ErrMember
	}
	m := &Mapping{Identity: id, Member: member, MappedBy: by, MappedAt: at.UTC().Truncate(time.Microsecond)}
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `INSERT INTO member_identities (org, kind, value, member, mapped_by, mapped_at)
			VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (org, kind, value)
			DO UPDATE SET member = excluded.member, mapped_by = excluded.mapped_by, mapped_at = excluded.mapped_at`,
			org, id.Kind, id.Value, member, by, m.MappedAt); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `DELETE FROM telemetry_unmapped WHERE org = $1 AND kind = $2 AND value = $3`, org, id.Kind, id.Value)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("map %s identity: %w", id.Kind, err)
	}
	return m, nil
}

// Unmap removes id's mapping in org: its events are unmapped again.
// ErrNotMapped when there was none.
func Unmap(ctx context.Context, pool *pgxpool.Pool, org string, id Identity) error {
	tag, err := pool.Exec(ctx, `DELETE FROM member_identities WHERE org = $1 AND kind = $2 AND value = $3`, org, id.Kind, id.Value)
	if err != nil {
		return fmt.Errorf("unmap %s identity: %w", id.Kind, err)
	}
	if tag.RowsAffected() == 0 {
		return ErrNotMapped
	}
	return nil
}

// List is org's mappings in (kind, value) order after the given identity
// (the zero Identity: from the first), at most limit (1 to MaxPage) of
// them; more says whether others follow.
func List(ctx context.Context, q streams.Querier, org string, after Identity, limit int) ([]Mapping, bool, error) {
	return listPage(ctx, q, "identities", `SELECT kind, value, member, mapped_by, mapped_at FROM member_identities
		WHERE org = $1 AND (kind, value) > ($2, $3) ORDER BY kind, value LIMIT $4`, org, after, limit,
		func(r pgx.CollectableRow) (Mapping, error) {
			var m Mapping
			err := r.Scan(&m.Kind, &m.Value, &m.Member, &m.MappedBy, &m.MappedAt)
			return m, err
		})
}
