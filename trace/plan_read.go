package trace

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/spinehq/spine/accounting"
	"github.com/spinehq/spine/streams"
)

// planSessions reads the owner's sessions that name id as their plan run
// (and, with byPlanID, those that name it as their plan): the first
// MaxPlanSessions by start, with their router-call rows. more says there
// were others; none is ErrNotFound.
//
// Each side of the match repeats its partial index's predicate
// (sessions_plan_run, sessions_plan: migration 015), so PostgreSQL can
// read those indexes whatever the id; an empty id matches nothing.
func planSessions(ctx context.Context, q streams.Querier, owner streams.Owner, id string, byPlanID bool) (
	sessions []PlanSession, more bool, err error) {
	match := `(parent_run_id = $1 AND parent_run_id <> '')`
	if byPlanID {
		match = `(` + match + ` OR (plan_id = $1 AND plan_id <> ''))`
	}
	rows, err := q.Query(ctx, `SELECT id, app, kind, status, model, effort, worker_id, plan_id, session_run_id,
			recorded_steps, dropped_actions, started_at, ended_at, parent_run_id, step_id
		FROM sessions WHERE org = $2 AND member = $3 AND `+match+`
		ORDER BY started_at, id LIMIT $4`, id, owner.Org, owner.Member, MaxPlanSessions+1)
	if err != nil {
		return nil, false, fmt.Errorf("trace plan %s: %w", id, err)
	}
	sessions, err = pgx.CollectRows(rows, scanPlanSession)
	if err != nil {
		return nil, false, fmt.Errorf("trace plan %s: %w", id, err)
	}
	if len(sessions) == 0 {
		return nil, false, ErrNotFound
	}
	if len(sessions) > MaxPlanSessions {
		sessions, more = sessions[:MaxPlanSessions], true
	}
	return sessions, more, attachPlanCalls(ctx, q, owner, sessions)
}

func scanPlanSession(r pgx.CollectableRow) (PlanSession, error) {
	var s PlanSession
	err := r.Scan(&s.ID, &s.App, &s.Kind, &s.Status, &s.Model, &s.Effort, &s.WorkerID, &s.PlanID, &s.RunID,
		&s.RecordedSteps, &s.DroppedActions, &s.StartedAt, &s.EndedAt, &s.parentRunID, &s.stepID)
	return s, err
}

// attachPlanCalls gives each session its router-call row, read in one
// statement.
func attachPlanCalls(ctx context.Context, q streams.Querier, owner streams.Owner, sessions []PlanSession) error {
	ids := make([]string, len(sessions))
	for i, s := range sessions {
		ids[i] = s.ID
	}
	calls, err := accounting.CallsOf(ctx, q, owner, ids)
	if err != nil {
		return err
	}
	for i := range sessions {
		sessions[i].RouterCall = calls[sessions[i].ID]
	}
	return nil
}
