package recorder

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/spinehq/spine/streams"
)

// Artifact is one file a session pushed, as its page lists it.
type Artifact struct {
	ID          string
	Kind        string // pushed, transcript
	Name        string
	Digest      string
	Size        int64
	Missing     bool // the Library could not store it
	Omitted     bool // over the per-file cap: referenced by digest only
	ByReference bool // the session named a digest it pushed elsewhere
	StepID      string
	// ProducedBy is the stamp, nil until the session has ended.
	ProducedBy *ProducedBy
	CreatedAt  time.Time
}

// SessionArtifacts reads the artifacts a session pushed, in the order they
// were made: at most limit, after the artifact whose id is after ("" =
// from the first). It reads no owner: the caller has read the session's
// row and checked it may show it.
func SessionArtifacts(ctx context.Context, q streams.Querier, sessionID, after string, limit int) ([]Artifact, error) {
	rows, err := q.Query(ctx, `SELECT id, kind, name, digest, size, content_missing, content_omitted, by_reference,
			step_id, produced_by, created_at
		FROM artifacts a WHERE session_id = $1 AND session_id <> '' AND kind <> 'upload'
		AND ($2 = '' OR (created_at, id) > (SELECT created_at, id FROM artifacts WHERE id = $2 AND session_id = $1))
		ORDER BY created_at, id LIMIT $3`, sessionID, after, limit)
	if err != nil {
		return nil, fmt.Errorf("read artifacts of %s: %w", sessionID, err)
	}
	arts, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Artifact, error) {
		var a Artifact
		err := r.Scan(&a.ID, &a.Kind, &a.Name, &a.Digest, &a.Size, &a.Missing, &a.Omitted, &a.ByReference,
			&a.StepID, &a.ProducedBy, &a.CreatedAt)
		return a, err
	})
	if err != nil {
		return nil, fmt.Errorf("read artifacts of %s: %w", sessionID, err)
	}
	return arts, nil
}
