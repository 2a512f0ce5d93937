package members

import (
	"context"
	"fmt"

	"github.com/spinehq/spine/streams"
)

// Members maps identities to the members an admin mapped them to.
type Members map[Identity]string

// Of is the member of an event that carries ids (in Kinds order): the
// first of them that is mapped.
func (m Members) Of(ids []Identity) (string, bool) {
	for _, id := range ids {
		if member, ok := m[id]; ok {
			return member, true
		}
	}
	return "", false
}

// Resolve reads the members ids are mapped to in org, in one query; an id
// no mapping names is absent from the answer.
func Resolve(ctx context.Context, q streams.Querier, org string, ids []Identity) (Members, error) {
	out := Members{}
	if len(ids) == 0 {
		return out, nil
	}
	kinds, values := columns(ids)
	rows, err := q.Query(ctx, `SELECT m.kind, m.value, m.member FROM member_identities m
		JOIN unnest($2::text[], $3::text[]) AS i(kind, value) ON m.kind = i.kind AND m.value = i.value
		WHERE m.org = $1`, org, kinds, values)
	if err != nil {
		return nil, fmt.Errorf("resolve identities: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id Identity
		var member string
		if err := rows.Scan(&id.Kind, &id.Value, &member); err != nil {
			return nil, fmt.Errorf("resolve identities: %w", err)
		}
		out[id] = member
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("resolve identities: %w", err)
	}
	return out, nil
}

// columns are ids as two arrays, for unnest.
func columns(ids []Identity) (kinds, values []string) {
	for _, id := range ids {
		kinds, values = append(kinds, id.Kind), append(values, id.Value)
	}
	return kinds, values
}
