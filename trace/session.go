package trace

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/spinehq/spine/accounting"
	"github.com/spinehq/spine/streams"
)

// Session follows a session down: its run and the planner step it
// served, what it did, what it pushed, and its router-call row.
type Session struct {
	Session      SessionRow       `json:"session"`
	Steps        int              `json:"steps"`
	Observations int              `json:"observations"`
	Artifacts    []Artifact       `json:"artifacts"`
	RouterCall   *accounting.Call `json:"routerCall"` // null until the session has ended
}

// OfSession traces a session the owner may see.
func OfSession(ctx context.Context, q streams.Querier, owner streams.Owner, id string) (*Session, error) {
	t := &Session{Artifacts: []Artifact{}}
	s := &t.Session
	err := q.QueryRow(ctx, `SELECT s.id, s.status, s.app, s.model, s.effort, s.billing, s.session_run_id,
			r.parent_run_id, r.parent_step_id, s.total_cost::text,
			(SELECT count(*) FROM steps WHERE run_id = s.session_run_id),
			(SELECT count(*) FROM observations WHERE run_id = s.session_run_id)
		FROM sessions s JOIN runs r ON r.id = s.session_run_id
		WHERE s.id = $1 AND s.org = $2 AND s.member = $3`, id, owner.Org, owner.Member).
		Scan(&s.ID, &s.Status, &s.App, &s.Model, &s.Effort, &s.BillingSignal, &s.RunID, &s.ParentRunID,
			&s.ParentStepID, &s.TotalCost, &t.Steps, &t.Observations)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("trace session %s: %w", id, err)
	}
	arts, err := tracedArtifacts(ctx, q, owner, `a.session_id = $1 AND a.org = $2 AND a.member = $3
		ORDER BY a.digest, a.created_at, a.id`, id, owner.Org, owner.Member)
	if err != nil {
		return nil, fmt.Errorf("trace session %s: %w", id, err)
	}
	t.Artifacts = append(t.Artifacts, arts...)
	calls, err := accounting.CallsOf(ctx, q, owner, []string{id})
	if err != nil {
		return nil, fmt.Errorf("trace session %s: %w", id, err)
	}
	if c := calls[id]; c != nil {
		t.RouterCall, s.Billing = c, c.Billing
	}
	return t, nil
}
