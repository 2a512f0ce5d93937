package trace

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/spinehq/spine/accounting"
	"github.com/spinehq/spine/streams"
)

// MaxPlanSessions bounds a plan's trace: the first sessions by start are
// listed, and More says there were others.
const MaxPlanSessions = 1000

// KindPlanRun is a plan run's kind in a steps answer. A plan run is the
// planner's: it has no row in runs and exists only as the parentRunId its
// sessions name (a session's own run is spine.KindSessionRecording).
const KindPlanRun = "plan"

// Plan is a plan from the top down: the plans its sessions carry, its
// runs, each run's steps and the sessions each step ran, and each plan's
// spend (docs/library.md#a-plan-from-the-top-down).
type Plan struct {
	ID      string    `json:"id"`      // as asked: a plan run id or a plan id
	PlanIDs []string  `json:"planIds"` // the plans its sessions carry, sorted; [] when none does
	Runs    []PlanRun `json:"runs"`    // in the order their first session started
	// Spend is each plan's standing, accounting's answer to GET
	// /v1/plans/{id}/spend (the caller's own calls, or every member's and
	// the budget for an org admin: PlanOpts.OrgSpend), for the plans of
	// PlanIDs that have one; a plan none of whose sessions has ended has
	// none.
	Spend    []*accounting.PlanSpend `json:"spend"`
	Sessions int                     `json:"sessions"` // listed in Runs, at most MaxPlanSessions
	More     bool                    `json:"more"`     // more sessions than MaxPlanSessions: the first by start are listed
}

// PlanRun is a plan run with its steps.
type PlanRun struct {
	RunID   string     `json:"runId"`   // "": the plan's sessions that named no run
	Kind    string     `json:"kind"`    // KindPlanRun
	PlanIDs []string   `json:"planIds"` // the plans its sessions carry, sorted
	Steps   []PlanStep `json:"steps"`   // the distinct step ids, in the order their first session started
}

// PlanStep is a step of a plan run and the sessions that served it, each
// with its own recording run (the step's child run).
type PlanStep struct {
	ID       string        `json:"id"` // "": sessions that named no step
	Sessions []PlanSession `json:"sessions"`
}

// PlanSession is a session that served a plan's step. Model and Effort are
// what the app reported ("" = not reported); RouterCall is its accounting
// row, with billing, tokens by kind and cost as reported (each null when
// not reported, never 0), null until the session ends.
type PlanSession struct {
	ID             string           `json:"id"`
	App            string           `json:"app"`
	Kind           string           `json:"kind"`
	Status         string           `json:"status"`
	Model          string           `json:"model"`
	Effort         string           `json:"effort"`
	WorkerID       string           `json:"workerId"`
	PlanID         string           `json:"planId"`
	RunID          string           `json:"runId"` // the session's recording run
	RecordedSteps  int              `json:"recordedSteps"`
	DroppedActions int              `json:"droppedActions"` // above 0: the recording has holes
	StartedAt      time.Time        `json:"startedAt"`
	EndedAt        *time.Time       `json:"endedAt"` // null while it runs
	RouterCall     *accounting.Call `json:"routerCall"`

	parentRunID, stepID string
}

// PlanRunSteps is a plan run's answer to GET /v1/runs/{id}/steps: its
// steps and the sessions each ran.
type PlanRunSteps struct {
	PlanRun
	Sessions int  `json:"sessions"` // listed, at most MaxPlanSessions
	More     bool `json:"more"`     // more sessions than MaxPlanSessions: the first by start are listed
}

// PlanOpts tune OfPlan; nil is the zero value.
type PlanOpts struct {
	// OrgSpend is for an org admin: each plan's spend counts every member's
	// calls and carries the plan's budget (dollar ceiling, loop cap), as GET
	// /v1/plans/{id}/spend answers an admin. False counts the caller's own
	// calls only, without the budget. The sessions listed are the caller's
	// either way.
	OrgSpend bool
}

// OfPlan traces a plan run id (the parentRunId of the owner's sessions) or
// a plan id (their planId), or both when an id is both. Nothing of the
// owner's naming it is ErrNotFound, another member's plan included.
func OfPlan(ctx context.Context, q streams.Querier, owner streams.Owner, id string, opts *PlanOpts) (*Plan, error) {
	if opts == nil {
		opts = &PlanOpts{}
	}
	sessions, more, err := planSessions(ctx, q, owner, id, true)
	if err != nil {
		return nil, err
	}
	p := &Plan{ID: id, PlanIDs: planIDs(sessions), Runs: groupRuns(sessions), Sessions: len(sessions), More: more,
		Spend: []*accounting.PlanSpend{}}
	member := owner.Member
	if opts.OrgSpend {
		member = ""
	}
	for _, plan := range p.PlanIDs {
		s, err := accounting.GetPlanSpend(ctx, q, owner.Org, plan, member)
		if errors.Is(err, accounting.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("trace plan %s: %w", id, err)
		}
		p.Spend = append(p.Spend, s)
	}
	return p, nil
}

// StepsOfPlanRun reads a plan run's steps, each with the owner's sessions
// that served it. A run none of the owner's sessions names is ErrNotFound.
func StepsOfPlanRun(ctx context.Context, q streams.Querier, owner streams.Owner, runID string) (*PlanRunSteps, error) {
	sessions, more, err := planSessions(ctx, q, owner, runID, false)
	if err != nil {
		return nil, err
	}
	return &PlanRunSteps{PlanRun: groupRuns(sessions)[0], Sessions: len(sessions), More: more}, nil
}

// planIDs are the distinct plans the sessions carry, sorted.
func planIDs(sessions []PlanSession) []string {
	ids := []string{}
	for _, s := range sessions {
		if s.PlanID != "" && !slices.Contains(ids, s.PlanID) {
			ids = append(ids, s.PlanID)
		}
	}
	slices.Sort(ids)
	return ids
}

// groupRuns puts sessions (in start order) under their plan run and step,
// each run and step where its first session stands.
func groupRuns(sessions []PlanSession) []PlanRun {
	var runs []PlanRun
	runAt := map[string]int{}
	stepAt := map[[2]string]int{}
	for _, s := range sessions {
		i, ok := runAt[s.parentRunID]
		if !ok {
			i = len(runs)
			runAt[s.parentRunID] = i
			runs = append(runs, PlanRun{RunID: s.parentRunID, Kind: KindPlanRun, PlanIDs: []string{}})
		}
		r := &runs[i]
		j, ok := stepAt[[2]string{s.parentRunID, s.stepID}]
		if !ok {
			j = len(r.Steps)
			stepAt[[2]string{s.parentRunID, s.stepID}] = j
			r.Steps = append(r.Steps, PlanStep{ID: s.stepID})
		}
		r.Steps[j].Sessions = append(r.Steps[j].Sessions, s)
		if s.PlanID != "" && !slices.Contains(r.PlanIDs, s.PlanID) {
			r.PlanIDs = append(r.PlanIDs, s.PlanID)
		}
	}
	for i := range runs {
		slices.Sort(runs[i].PlanIDs)
	}
	return runs
}
