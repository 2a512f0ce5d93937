package views

import (
	"context"
	"errors"
	"fmt"

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
	Ended        bool
	Called       bool // accounting has written the router-call row
}

// The parts of a session's page a change names (docs/ui.md): the page
// fetches again only those of its parts (data-part) a change names.
const (
	PartFacts      = "facts"
	PartTranscript = "transcript"
	PartSteps      = "steps"
	PartArtifacts  = "artifacts"
)

// Parts names the parts of the session's page that moved since prev: the
// transcript with a chunk or a hole; the steps with an observation (a
// step's result, a late one on a step shown, a note); the artifacts with
// an observation (a file written is pushed) or the end (which stamps
// them); the facts with a hole ("Incomplete"), the end or the router
// call. None: nothing the page shows moved.
func (p Progress) Parts(prev Progress) []string {
	var parts []string
	add := func(part string, moved bool) {
		if moved {
			parts = append(parts, part)
		}
	}
	add(PartFacts, p.Dropped != prev.Dropped || p.Ended != prev.Ended || p.Called != prev.Called)
	add(PartTranscript, p.LastSeq != prev.LastSeq || p.Dropped != prev.Dropped)
	add(PartSteps, p.Observations != prev.Observations)
	add(PartArtifacts, p.Observations != prev.Observations || p.Ended != prev.Ended)
	return parts
}

// ReadProgress reads a session's Progress by its id alone (two primary-key
// probes), for a caller that has read the session in its scope once:
// recorder.ErrNotFound when the session is gone.
func ReadProgress(ctx context.Context, q streams.Querier, id string) (Progress, error) {
	var p Progress
	err := q.QueryRow(ctx, `SELECT s.last_seq, s.observation_count, s.dropped_actions, s.ended_at IS NOT NULL, EXISTS (SELECT FROM router_calls c WHERE c.session_id = s.id)
		FROM sessions s WHERE s.id = $1`, id).
		Scan(&p.LastSeq, &p.Observations, &p.Dropped, &p.Ended, &p.Called)
	if errors.Is(err, pgx.ErrNoRows) {
		return p, recorder.ErrNotFound
	}
	if err != nil {
		return p, fmt.Errorf("progress of %s: %w", id, err)
	}
	return p, nil
}
