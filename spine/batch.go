package spine

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// Batch collects rows for one transaction and writes them in bulk.
type Batch struct {
	runs  []Run
	links []Run // runs whose parent is learnt after they were written
	steps []Step
	obs   []Observation
}

// AddRun queues a run.
func (b *Batch) AddRun(r Run) { b.runs = append(b.runs, r) }

// LinkRun sets the parent run and step of a run queued or written before
// (a session's run made before its start named the step it serves).
func (b *Batch) LinkRun(runID, parentRunID, parentStepID string) {
	b.links = append(b.links, Run{ID: runID, ParentRunID: parentRunID, ParentStepID: parentStepID})
}

// AddStep queues a step.
func (b *Batch) AddStep(s Step) { b.steps = append(b.steps, s) }

// AddObservation queues an observation.
func (b *Batch) AddObservation(o Observation) { b.obs = append(b.obs, o) }

// Len is the number of rows queued.
func (b *Batch) Len() int { return len(b.runs) + len(b.links) + len(b.steps) + len(b.obs) }

// Flush writes every queued row with COPY and empties the batch.
func (b *Batch) Flush(ctx context.Context, tx pgx.Tx) error {
	if err := b.copyRuns(ctx, tx); err != nil {
		return err
	}
	if err := b.linkRuns(ctx, tx); err != nil {
		return err
	}
	if err := b.copySteps(ctx, tx); err != nil {
		return err
	}
	if err := b.copyObservations(ctx, tx); err != nil {
		return err
	}
	*b = Batch{}
	return nil
}

func (b *Batch) copyRuns(ctx context.Context, tx pgx.Tx) error {
	if len(b.runs) == 0 {
		return nil
	}
	_, err := tx.CopyFrom(ctx, pgx.Identifier{"runs"},
		[]string{"id", "kind", "org", "member", "session_id", "parent_run_id", "parent_step_id", "created_at"},
		pgx.CopyFromSlice(len(b.runs), func(i int) ([]any, error) {
			r := b.runs[i]
			return []any{r.ID, r.Kind, r.Org, r.Member, r.SessionID, r.ParentRunID, r.ParentStepID, r.CreatedAt}, nil
		}))
	if err != nil {
		return fmt.Errorf("copy %d runs: %w", len(b.runs), err)
	}
	return nil
}

// linkRuns writes the links, the last of a run's winning, in one statement.
func (b *Batch) linkRuns(ctx context.Context, tx pgx.Tx) error {
	if len(b.links) == 0 {
		return nil
	}
	last := map[string]int{}
	for i, l := range b.links {
		last[l.ID] = i
	}
	var ids, parents, steps []string
	for i, l := range b.links {
		if last[l.ID] == i {
			ids, parents, steps = append(ids, l.ID), append(parents, l.ParentRunID), append(steps, l.ParentStepID)
		}
	}
	_, err := tx.Exec(ctx, `UPDATE runs r SET parent_run_id = u.parent, parent_step_id = u.step
		FROM unnest($1::text[], $2::text[], $3::text[]) AS u(id, parent, step) WHERE r.id = u.id`,
		pgx.QueryExecModeExec, ids, parents, steps)
	if err != nil {
		return fmt.Errorf("link %d runs: %w", len(ids), err)
	}
	return nil
}

func (b *Batch) copySteps(ctx context.Context, tx pgx.Tx) error {
	if len(b.steps) == 0 {
		return nil
	}
	_, err := tx.CopyFrom(ctx, pgx.Identifier{"steps"},
		[]string{"run_id", "idx", "id", "action", "source", "session_seq", "call_id", "detail", "at"},
		pgx.CopyFromSlice(len(b.steps), func(i int) ([]any, error) {
			s := b.steps[i]
			return []any{s.RunID, s.Idx, s.ID, s.Action, s.Source, s.SessionSeq, s.CallID, string(s.Detail), s.At}, nil
		}))
	if err != nil {
		return fmt.Errorf("copy %d steps: %w", len(b.steps), err)
	}
	return nil
}

func (b *Batch) copyObservations(ctx context.Context, tx pgx.Tx) error {
	if len(b.obs) == 0 {
		return nil
	}
	_, err := tx.CopyFrom(ctx, pgx.Identifier{"observations"},
		[]string{"run_id", "idx", "step_id", "kind", "body", "at"},
		pgx.CopyFromSlice(len(b.obs), func(i int) ([]any, error) {
			o := b.obs[i]
			return []any{o.RunID, o.Idx, o.StepID, o.Kind, string(o.Body), o.At}, nil
		}))
	if err != nil {
		return fmt.Errorf("copy %d observations: %w", len(b.obs), err)
	}
	return nil
}
