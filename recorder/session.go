package recorder

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// Session statuses. A session is running from its start until its end
// (done, failed, cancelled, disconnected, timeout).
const StatusRunning = "running"

// Session is the session row: the seed's v1:worker:appSession.
type Session struct {
	ID               string          `json:"id"`
	Org              string          `json:"org"`
	Member           string          `json:"member"`
	App              string          `json:"app"`
	Kind             string          `json:"kind"`
	Level            string          `json:"level"`
	AppSessionRef    string          `json:"appSessionRef,omitempty"`
	Workspace        string          `json:"workspace,omitempty"`
	PlanID           string          `json:"planId,omitempty"`
	TaskID           string          `json:"taskId,omitempty"`
	StepID           string          `json:"stepId,omitempty"`
	ParentRunID      string          `json:"parentRunId,omitempty"`
	WorkerID         string          `json:"workerId,omitempty"`
	PromptDigest     string          `json:"promptDigest,omitempty"`
	Status           string          `json:"status"`
	SessionRunID     string          `json:"sessionRunId"`
	TranscriptFileID string          `json:"transcriptFileId"`
	RecordedSteps    int             `json:"recordedSteps"`
	DroppedActions   int             `json:"droppedActions"`
	Complete         bool            `json:"complete"` // false when the recording has holes
	LastSeq          int64           `json:"lastSeq"`
	ExitCode         *int            `json:"exitCode"`
	Error            string          `json:"error"`
	Model            string          `json:"model"`
	Effort           string          `json:"effort"`
	Usage            json.RawMessage `json:"usage"`
	TotalCost        *float64        `json:"totalCost"`
	Billing          string          `json:"billing"`
	Door             string          `json:"door"`
	StartedAt        time.Time       `json:"startedAt"`
	EndedAt          *time.Time      `json:"endedAt"`
	UpdatedAt        time.Time       `json:"updatedAt"`
	Partition        int             `json:"-"`

	observations int  // observation_count: the run's next observation idx - 1
	isNew        bool // inserted by this batch
	dirty        bool
	needsFinal   bool // ended in this batch: write its transcript at flush
}

// Ended reports whether the session has ended.
func (s *Session) Ended() bool { return s.EndedAt != nil }

const sessionColumns = `id, org, member, app, kind, level, app_session_ref, workspace, plan_id, task_id,
	step_id, parent_run_id, worker_id, prompt_digest, status, session_run_id, transcript_file_id,
	recorded_steps, observation_count, dropped_actions, last_seq, exit_code, error, model, effort,
	usage, total_cost, billing, door, started_at, ended_at, updated_at, partition`

func (s *Session) scanTargets() []any {
	return []any{&s.ID, &s.Org, &s.Member, &s.App, &s.Kind, &s.Level, &s.AppSessionRef, &s.Workspace,
		&s.PlanID, &s.TaskID, &s.StepID, &s.ParentRunID, &s.WorkerID, &s.PromptDigest, &s.Status,
		&s.SessionRunID, &s.TranscriptFileID, &s.RecordedSteps, &s.observations, &s.DroppedActions,
		&s.LastSeq, &s.ExitCode, &s.Error, &s.Model, &s.Effort, &s.Usage, &s.TotalCost, &s.Billing,
		&s.Door, &s.StartedAt, &s.EndedAt, &s.UpdatedAt, &s.Partition}
}

func (s *Session) values() []any {
	var usage any
	if len(s.Usage) > 0 {
		usage = string(s.Usage)
	}
	return []any{s.ID, s.Org, s.Member, s.App, s.Kind, s.Level, s.AppSessionRef, s.Workspace,
		s.PlanID, s.TaskID, s.StepID, s.ParentRunID, s.WorkerID, s.PromptDigest, s.Status,
		s.SessionRunID, s.TranscriptFileID, s.RecordedSteps, s.observations, s.DroppedActions,
		s.LastSeq, s.ExitCode, s.Error, s.Model, s.Effort, usage, s.TotalCost, s.Billing,
		s.Door, s.StartedAt, s.EndedAt, s.UpdatedAt, s.Partition}
}

func scanSessions(rows pgx.Rows) ([]*Session, error) {
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (*Session, error) {
		s := &Session{}
		err := r.Scan(s.scanTargets()...)
		s.Complete = s.DroppedActions == 0
		return s, err
	})
}

// loadSessions reads the rows of the given sessions.
func loadSessions(ctx context.Context, q pgx.Tx, ids []string) ([]*Session, error) {
	rows, err := q.Query(ctx, `SELECT `+sessionColumns+` FROM sessions WHERE id = ANY($1)`, ids)
	if err != nil {
		return nil, fmt.Errorf("load %d sessions: %w", len(ids), err)
	}
	return scanSessions(rows)
}

// liveOnWorker lists the sessions of one partition still running on a
// worker (partition -1: every partition).
func liveOnWorker(ctx context.Context, q pgx.Tx, workerID string, partition int) ([]*Session, error) {
	rows, err := q.Query(ctx, `SELECT `+sessionColumns+` FROM sessions WHERE worker_id = $1 AND ended_at IS NULL
		AND ($2 < 0 OR partition = $2) ORDER BY id`, workerID, partition)
	if err != nil {
		return nil, fmt.Errorf("live sessions on worker %s: %w", workerID, err)
	}
	return scanSessions(rows)
}

// writeSessions inserts new sessions and updates changed ones in one round trip.
func writeSessions(ctx context.Context, tx pgx.Tx, sessions []*Session) error {
	b := &pgx.Batch{}
	for _, s := range sessions {
		switch {
		case s.isNew:
			b.Queue(`INSERT INTO sessions (`+sessionColumns+`) VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,
				$11,$12,$13,$14,$15,$16,$17,$18,$19,$20,$21,$22,$23,$24,$25,$26,$27,$28,$29,$30,$31,$32,$33)`, s.values()...)
		case s.dirty:
			b.Queue(`UPDATE sessions SET status=$2, transcript_file_id=$3, recorded_steps=$4, observation_count=$5,
				dropped_actions=$6, last_seq=$7, exit_code=$8, error=$9, model=$10, effort=$11, usage=$12,
				total_cost=$13, billing=$14, door=$15, ended_at=$16, updated_at=$17 WHERE id=$1`,
				s.ID, s.Status, s.TranscriptFileID, s.RecordedSteps, s.observations, s.DroppedActions,
				s.LastSeq, s.ExitCode, s.Error, s.Model, s.Effort, nullJSON(s.Usage), s.TotalCost,
				s.Billing, s.Door, s.EndedAt, s.UpdatedAt)
		}
		s.isNew, s.dirty = false, false
	}
	if b.Len() == 0 {
		return nil
	}
	if err := tx.SendBatch(ctx, b).Close(); err != nil {
		return fmt.Errorf("write %d sessions: %w", b.Len(), err)
	}
	return nil
}

func nullJSON(b json.RawMessage) any {
	if len(b) == 0 {
		return nil
	}
	return string(b)
}
