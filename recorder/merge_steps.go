package recorder

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/spinehq/spine/spine"
)

// A start over a telemetry session supersedes the session's telemetry
// steps other than MCP calls (docs/recording.md#telemetry-sessions): the
// door records those tools again (spine collect reads the app's files from
// their beginning, and may start late or replay them) with no call id to
// match them by, so they would be there twice. They go, with their
// observations and what they pushed. An MCP call stays: the door's
// mcp_call event names the same call id and is that step. Their count
// moves from recordedSteps to superseded_steps, so the door's steps are
// numbered after every step the run ever had, and a reader that paged
// past the superseded ones misses none of the door's.

// supersedable reports whether a start supersedes a step of source and
// action.
func supersedable(source, action string) bool {
	return source == spine.SourceTelemetry && action != "mcp_call"
}

// supersede drops s's supersedable steps of this batch, and has flush
// delete those of earlier batches (writeSuperseded).
func (b *batch) supersede(s *Session) {
	run := s.SessionRunID
	dropped := map[string]bool{}
	b.steps = slices.DeleteFunc(b.steps, func(p *pendingStep) bool {
		drop := p.step.RunID == run && supersedable(p.step.Source, p.step.Action)
		if drop {
			dropped[p.step.ID] = true
		}
		return drop
	})
	b.arts = slices.DeleteFunc(b.arts, func(a *artifact) bool { return dropped[a.stepID] })
	for k := range b.supersedable {
		if strings.HasPrefix(k, run+"\x00") {
			delete(b.calls, k)
			delete(b.supersedable, k)
		}
	}
	s.supersedeSteps(len(dropped))
	if !s.isNew {
		b.superseded = append(b.superseded, s)
	}
}

// supersedeSteps moves n steps from the session's count to its
// superseded ones: the next step's index stays where it was.
func (s *Session) supersedeSteps(n int) {
	s.RecordedSteps -= n
	s.superseded += n
	s.dirty = true
}

// writeSuperseded deletes the supersedable steps that earlier batches
// wrote for the sessions a start superseded, with their observations and
// pushed artifacts, in one statement, and moves their count.
func (b *batch) writeSuperseded(ctx context.Context) error {
	if len(b.superseded) == 0 {
		return nil
	}
	byRun := make(map[string]*Session, len(b.superseded))
	runs := make([]string, len(b.superseded))
	for i, s := range b.superseded {
		byRun[s.SessionRunID], runs[i] = s, s.SessionRunID
	}
	rows, err := b.tx.Query(ctx, `WITH gone AS (
			DELETE FROM steps WHERE run_id = ANY($1) AND source = $2 AND action <> 'mcp_call' RETURNING run_id, id),
		obs AS (DELETE FROM observations o USING gone g WHERE o.run_id = g.run_id AND o.step_id = g.id),
		arts AS (DELETE FROM artifacts a USING gone g WHERE a.id = 'art-' || g.id AND a.kind = 'pushed')
		SELECT run_id, count(*) FROM gone GROUP BY run_id`, pgx.QueryExecModeExec, runs, spine.SourceTelemetry)
	if err != nil {
		return fmt.Errorf("supersede the telemetry steps of %d sessions: %w", len(runs), err)
	}
	var run string
	var n int
	_, err = pgx.ForEachRow(rows, []any{&run, &n}, func() error {
		byRun[run].supersedeSteps(n)
		return nil
	})
	if err != nil {
		return fmt.Errorf("supersede the telemetry steps of %d sessions: %w", len(runs), err)
	}
	return nil
}
