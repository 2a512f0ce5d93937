package spine

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"

	"github.com/spinehq/spine/streams"
)

// ErrNotFound: no such run (or not the caller's: the two are one answer).
var ErrNotFound = errors.New("run not found")

// GetRun reads a run the owner may see.
func GetRun(ctx context.Context, q streams.Querier, owner streams.Owner, id string) (*Run, error) {
	return getRun(ctx, q, id, func(r *Run) bool { return r.Org == owner.Org && r.Member == owner.Member })
}

// GetRunIn reads a run in a reader's scope, as recorder.GetSessionIn reads
// its session: the scope's own when it names a member, any of the org's
// when its Member is "" (an org admin). Outside it, ErrNotFound.
func GetRunIn(ctx context.Context, q streams.Querier, scope streams.Owner, id string) (*Run, error) {
	return getRun(ctx, q, id, func(r *Run) bool {
		return r.Org == scope.Org && (scope.Member == "" || r.Member == scope.Member)
	})
}

func getRun(ctx context.Context, q streams.Querier, id string, visible func(*Run) bool) (*Run, error) {
	var r Run
	err := q.QueryRow(ctx, `SELECT id, kind, org, member, session_id, parent_run_id, parent_step_id, created_at
		FROM runs WHERE id = $1`, id).
		Scan(&r.ID, &r.Kind, &r.Org, &r.Member, &r.SessionID, &r.ParentRunID, &r.ParentStepID, &r.CreatedAt)
	if errors.Is(err, pgx.ErrNoRows) || (err == nil && !visible(&r)) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("get run %s: %w", id, err)
	}
	return &r, nil
}

// StepsPage is a page of a run's steps, each with its observations, plus
// (on the first page) the run's notes and control observations.
type StepsPage struct {
	RunID string        `json:"runId"`
	Kind  string        `json:"kind,omitempty"` // the run's (KindSessionRecording), when the reader set it
	Steps []Step        `json:"steps"`
	Notes []Observation `json:"notes"`
	Next  int           `json:"next"` // pass as since for the next page
	More  bool          `json:"more"`
}

// Steps reads steps with idx > since, at most limit of them.
func Steps(ctx context.Context, q streams.Querier, runID string, since, limit int) (*StepsPage, error) {
	rows, err := q.Query(ctx, `SELECT run_id, idx, id, action, source, session_seq, call_id, detail, at
		FROM steps WHERE run_id = $1 AND idx > $2 ORDER BY idx LIMIT $3`, runID, since, limit+1)
	if err != nil {
		return nil, fmt.Errorf("read steps of %s: %w", runID, err)
	}
	steps, err := pgx.CollectRows(rows, scanStep)
	if err != nil {
		return nil, fmt.Errorf("read steps of %s: %w", runID, err)
	}
	page := &StepsPage{RunID: runID, Steps: steps, Next: since, Notes: []Observation{}}
	if len(steps) > limit {
		page.Steps, page.More = steps[:limit], true
	}
	if n := len(page.Steps); n > 0 {
		page.Next = page.Steps[n-1].Idx
	}
	return page, attachObservations(ctx, q, page, since == 0)
}

// LastObservation is the idx of the run's last observation (0: none): a
// cursor for StepsObserved, read before the steps it is to follow.
func LastObservation(ctx context.Context, q streams.Querier, runID string) (int, error) {
	var idx int
	err := q.QueryRow(ctx, `SELECT coalesce(max(idx), 0) FROM observations WHERE run_id = $1`, runID).Scan(&idx)
	if err != nil {
		return 0, fmt.Errorf("last observation of %s: %w", runID, err)
	}
	return idx, nil
}

// StepsObserved reads the steps after step from that have an observation
// after the run's observation since, in step order, each with all its
// observations: a live page's tail of steps, which a new step joins (its
// result is an observation) and a step it shows comes again to when an
// observation lands on it later (an MCP node's record of a call the
// session reported first). It looks at most limit observations past since;
// Next is the last of those (pass it as since), More that more wait.
func StepsObserved(ctx context.Context, q streams.Querier, runID string, from, since, limit int) (*StepsPage, error) {
	rows, err := q.Query(ctx, `SELECT idx, step_id FROM observations WHERE run_id = $1 AND idx > $2 ORDER BY idx LIMIT $3`,
		runID, since, limit+1)
	if err != nil {
		return nil, fmt.Errorf("read observations of %s: %w", runID, err)
	}
	obs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Observation, error) {
		var o Observation
		err := r.Scan(&o.Idx, &o.StepID)
		return o, err
	})
	if err != nil {
		return nil, fmt.Errorf("read observations of %s: %w", runID, err)
	}
	page := &StepsPage{RunID: runID, Next: since, Notes: []Observation{}}
	if len(obs) > limit {
		obs, page.More = obs[:limit], true
	}
	var ids []string
	for _, o := range obs {
		if o.StepID != "" && !slices.Contains(ids, o.StepID) {
			ids = append(ids, o.StepID)
		}
		page.Next = o.Idx
	}
	if len(ids) == 0 {
		return page, nil
	}
	rows, err = q.Query(ctx, `SELECT run_id, idx, id, action, source, session_seq, call_id, detail, at
		FROM steps WHERE run_id = $1 AND idx > $2 AND id = ANY($3) ORDER BY idx`, runID, from, ids)
	if err != nil {
		return nil, fmt.Errorf("read steps of %s: %w", runID, err)
	}
	if page.Steps, err = pgx.CollectRows(rows, scanStep); err != nil {
		return nil, fmt.Errorf("read steps of %s: %w", runID, err)
	}
	return page, attachObservations(ctx, q, page, false)
}

func scanStep(r pgx.CollectableRow) (Step, error) {
	var s Step
	err := r.Scan(&s.RunID, &s.Idx, &s.ID, &s.Action, &s.Source, &s.SessionSeq, &s.CallID, &s.Detail, &s.At)
	return s, err
}

func attachObservations(ctx context.Context, q streams.Querier, page *StepsPage, firstPage bool) error {
	ids := make([]string, len(page.Steps))
	byID := make(map[string]int, len(page.Steps))
	for i, s := range page.Steps {
		ids[i], byID[s.ID] = s.ID, i
	}
	// Run-level observations (notes, controls) are few: the first page carries them all.
	rows, err := q.Query(ctx, `SELECT run_id, idx, step_id, kind, body, at FROM observations
		WHERE run_id = $1 AND (step_id = ANY($2) OR (step_id = '' AND $3)) ORDER BY idx`,
		page.RunID, ids, firstPage)
	if err != nil {
		return fmt.Errorf("read observations of %s: %w", page.RunID, err)
	}
	obs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Observation, error) {
		var o Observation
		err := r.Scan(&o.RunID, &o.Idx, &o.StepID, &o.Kind, &o.Body, &o.At)
		return o, err
	})
	if err != nil {
		return fmt.Errorf("read observations of %s: %w", page.RunID, err)
	}
	for _, o := range obs {
		if i, ok := byID[o.StepID]; ok {
			page.Steps[i].Observations = append(page.Steps[i].Observations, o)
		} else if o.StepID == "" {
			page.Notes = append(page.Notes, o)
		}
	}
	return nil
}
