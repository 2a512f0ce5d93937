package views

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/spinehq/spine/recorder"
	"github.com/spinehq/spine/streams"
)

// Progress is how far a session's recording has come: what its page's
// events compare from one poll to the next.
type Progress struct {
	LastSeq      int64
	Observations int // the run's observations: an MCP node's result adds one without a chunk
	Dropped      int
	UpdatedAt    time.Time
	Ended        bool
	Called       bool // accounting has written the router-call row
}

// Same reports whether two polls saw the same recording.
func (p Progress) Same(o Progress) bool {
	return p.LastSeq == o.LastSeq && p.Observations == o.Observations && p.Dropped == o.Dropped &&
		p.UpdatedAt.Equal(o.UpdatedAt) && p.Ended == o.Ended && p.Called == o.Called
}

// ReadProgress reads a session's Progress by its id alone (two primary-key
// probes), for a caller that has read the session in its scope once:
// recorder.ErrNotFound when the session is gone.
func ReadProgress(ctx context.Context, q streams.Querier, id string) (Progress, error) {
	var p Progress
	err := q.QueryRow(ctx, `SELECT s.last_seq, s.observation_count, s.dropped_actions, s.updated_at,
			s.ended_at IS NOT NULL, EXISTS (SELECT FROM router_calls c WHERE c.session_id = s.id)
		FROM sessions s WHERE s.id = $1`, id).
		Scan(&p.LastSeq, &p.Observations, &p.Dropped, &p.UpdatedAt, &p.Ended, &p.Called)
	if errors.Is(err, pgx.ErrNoRows) {
		return p, recorder.ErrNotFound
	}
	if err != nil {
		return p, fmt.Errorf("progress of %s: %w", id, err)
	}
	return p, nil
}
