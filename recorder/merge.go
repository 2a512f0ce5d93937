package recorder

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/spinehq/spine/streams"
)

// A session that arrives by its app's telemetry and by a door that starts
// it (spine collect, run, import, the runner) is one session: the
// telemetry's id is apps.SessionID of the app's own id, as the door's is.
// When the start comes after the telemetry, it applies over the telemetry
// session of the same owner instead of being a duplicate: the start fills
// in what it knows, and the session is that door's from then on (origin
// ""), its usage, cost, model, steps and end the door's (until the door
// reports them, none; an MCP call's step stays, merge_steps.go). A
// telemetry session that had
// ended (a hook's SessionEnd, the telemetry idle time) runs again, so the
// door's chunks and end are recorded: its transcript artifact goes, to be
// written again at the door's end, and the producedBy of what it pushed
// is stamped again then.

// merge applies start e over the telemetry session s of the same owner.
func (b *batch) merge(s *Session, m streams.Message, e *streams.Envelope) {
	s.App, s.Kind, s.Level, s.Workspace = e.App, e.Kind, e.Level, e.Workspace
	s.PlanID, s.TaskID, s.StepID, s.ParentRunID = e.PlanID, e.TaskID, e.StepID, e.ParentRunID
	if e.AppSessionRef != "" {
		s.AppSessionRef = e.AppSessionRef
	}
	if e.WorkerID != "" {
		s.WorkerID = e.WorkerID
	}
	if e.Prompt != "" {
		s.PromptDigest = b.putBlob([]byte(e.Prompt))
	}
	s.StartedAt = e.At // as the door saw it begin (accounting's row says the same)
	// What the telemetry summed is not the door's: it reports its own.
	s.Usage, s.TotalCost, s.Model, s.Effort = nil, nil, "", ""
	s.Origin, s.described, s.dirty = "", true, true
	b.supersede(s) // the door records its tools again (merge_steps.go)
	if e.ParentRunID != "" {
		b.work.LinkRun(s.SessionRunID, e.ParentRunID, e.StepID)
	}
	if s.Ended() {
		b.reopen(s)
	}
	s.heard(m)
}

// reopen makes an ended telemetry session run again: for a door's start,
// or for its telemetry after the idle sweeper ended it (telemetry.go).
func (b *batch) reopen(s *Session) {
	s.Status, s.ExitCode, s.Error, s.TranscriptFileID = StatusRunning, nil, "", ""
	s.EndedAt, s.needsFinal, s.swept = nil, false, false
	b.reopened = append(b.reopened, s.ID)
}

// writeReopened takes back what the end of the reopened sessions wrote on
// their artifacts, before this batch writes any (one may end again in it).
func (b *batch) writeReopened(ctx context.Context) error {
	if len(b.reopened) == 0 {
		return nil
	}
	transcripts := make([]string, len(b.reopened))
	for i, id := range b.reopened {
		transcripts[i] = "art-" + id + "-transcript"
	}
	_, err := b.tx.Exec(ctx, `DELETE FROM artifacts WHERE id = ANY($1) AND kind = 'transcript'`,
		pgx.QueryExecModeExec, transcripts)
	if err != nil {
		return fmt.Errorf("reopen %d sessions: %w", len(b.reopened), err)
	}
	_, err = b.tx.Exec(ctx, `UPDATE artifacts SET produced_by = NULL
		WHERE session_id = ANY($1) AND session_id <> '' AND kind <> 'upload'`, pgx.QueryExecModeExec, b.reopened)
	if err != nil {
		return fmt.Errorf("reopen %d sessions: %w", len(b.reopened), err)
	}
	return nil
}
