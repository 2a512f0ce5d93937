package recorder

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/spinehq/spine/accounting"
	"github.com/spinehq/spine/streams"
)

// Session statuses. A session is running from its start until its end
// (done, failed, cancelled, disconnected, timeout).
const StatusRunning = "running"

// StatusCancelled is the status of a session ended after a cancel.
const StatusCancelled = "cancelled"

// OriginTelemetry is the origin of a session the apps' own telemetry
// created (no door started it); a start's session has origin "".
const OriginTelemetry = "telemetry"

// Session is the session row: one per app session, kept by the recorder
// (docs/design.md#ownership).
type Session struct {
	ID               string `json:"id"`
	Org              string `json:"org"`
	Member           string `json:"member"`
	App              string `json:"app"`
	Kind             string `json:"kind"`
	Level            string `json:"level"`
	AppSessionRef    string `json:"appSessionRef,omitempty"`
	Workspace        string `json:"workspace,omitempty"`
	PlanID           string `json:"planId,omitempty"`
	TaskID           string `json:"taskId,omitempty"`
	StepID           string `json:"stepId,omitempty"`
	ParentRunID      string `json:"parentRunId,omitempty"`
	WorkerID         string `json:"workerId,omitempty"`
	PromptDigest     string `json:"promptDigest,omitempty"`
	Status           string `json:"status"`
	SessionRunID     string `json:"sessionRunId"`
	TranscriptFileID string `json:"transcriptFileId"`
	RecordedSteps    int    `json:"recordedSteps"`
	DroppedActions   int    `json:"droppedActions"`
	Complete         bool   `json:"complete"` // false when the recording has holes
	LastSeq          int64  `json:"lastSeq"`
	ExitCode         *int   `json:"exitCode"`
	Error            string `json:"error"`
	Model            string `json:"model"`
	Effort           string `json:"effort"`
	// Usage is the end's usage as its producer sent it: the app's buckets
	// (inputTokens is the input that neither read nor wrote the cache).
	Usage json.RawMessage `json:"usage"`
	// Tokens are Usage in the convention of every report (input with cache
	// reads and writes, total = input + output: accounting.Normalise,
	// docs/counting.md), as the session's router call counts it; null when
	// the app reported none. Set by GetSession.
	Tokens    *accounting.Tokens `json:"tokens"`
	TotalCost *float64           `json:"totalCost"`
	Billing   string             `json:"billing"`
	Door      string             `json:"door"`
	StartedAt time.Time          `json:"startedAt"`
	EndedAt   *time.Time         `json:"endedAt"`
	UpdatedAt time.Time          `json:"updatedAt"`
	// CancelRequestedAt is when JetStream stored the first cancel of a
	// session still running (its owner's spine cancel): its producer polls
	// it to stop the app (spine run, docs/run.md). Set by GetSession.
	CancelRequestedAt *time.Time `json:"cancelRequestedAt,omitempty"`
	// Origin is OriginTelemetry for a session the apps' telemetry created,
	// until a start of its owner's makes it that door's (""). A telemetry
	// session's usage, totalCost, model and effort are its requests'
	// (docs/telemetry.md).
	Origin    string `json:"origin,omitempty"`
	Partition int    `json:"-"`

	observations int // observation_count: the run's next observation idx - 1
	superseded   int // superseded_steps: telemetry steps a door's start superseded (merge_steps.go)
	// swept: the idle sweeper ended this telemetry session, and its
	// telemetry other than a request runs it again (telemetry.go).
	swept      bool
	isNew      bool // inserted by this batch
	dirty      bool
	needsFinal bool       // ended in this batch: write its transcript at flush
	described  bool       // a start's columns changed (a start over a telemetry session, a prompt's digest)
	holes      [][2]int64 // the seqs missing, from and to, noted in this batch

	// received and cancelRequested are when JetStream stored the session's
	// last envelope and its first cancel; the sweeper decides by them. Set
	// only while the session runs.
	received, cancelRequested *time.Time
}

// Ended reports whether the session has ended.
func (s *Session) Ended() bool { return s.EndedAt != nil }

// sessionColumns is every column of sessions, in values() order.
const sessionColumns = "id, org, member, app, kind, level, app_session_ref, workspace, plan_id, task_id, " +
	"step_id, parent_run_id, worker_id, prompt_digest, status, session_run_id, transcript_file_id, " +
	"recorded_steps, observation_count, dropped_actions, last_seq, exit_code, error, model, effort, " +
	"usage, total_cost, billing, door, started_at, ended_at, updated_at, partition, " +
	"received_at, cancel_requested_at, origin, superseded_steps, swept"

// sessionColumnNames are sessionColumns one by one, for COPY.
var sessionColumnNames = strings.Split(sessionColumns, ", ")

func (s *Session) scanTargets() []any {
	return []any{&s.ID, &s.Org, &s.Member, &s.App, &s.Kind, &s.Level, &s.AppSessionRef, &s.Workspace,
		&s.PlanID, &s.TaskID, &s.StepID, &s.ParentRunID, &s.WorkerID, &s.PromptDigest, &s.Status,
		&s.SessionRunID, &s.TranscriptFileID, &s.RecordedSteps, &s.observations, &s.DroppedActions,
		&s.LastSeq, &s.ExitCode, &s.Error, &s.Model, &s.Effort, &s.Usage, &s.TotalCost, &s.Billing,
		&s.Door, &s.StartedAt, &s.EndedAt, &s.UpdatedAt, &s.Partition, &s.received, &s.cancelRequested, &s.Origin,
		&s.superseded, &s.swept}
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
		s.Door, s.StartedAt, s.EndedAt, s.UpdatedAt, s.Partition, s.received, s.cancelRequested, s.Origin,
		s.superseded, s.swept}
}

func scanSessions(rows pgx.Rows) ([]*Session, error) {
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (*Session, error) {
		s := &Session{}
		err := r.Scan(s.scanTargets()...)
		s.Complete = s.DroppedActions == 0
		return s, err
	})
}

// loadSessions reads the rows of the given sessions: one primary-key probe
// per id (the LATERAL join; its LIMIT keeps the planner from flattening it
// into a hash join over the whole table), whatever the statistics say. With
// id = ANY($1) instead, a plan made while the table was young (or never
// analysed: autovacuum may be off) scanned every session ever recorded,
// once per batch.
func loadSessions(ctx context.Context, q pgx.Tx, ids []string) ([]*Session, error) {
	rows, err := q.Query(ctx, `SELECT s.* FROM unnest($1::text[]) AS u(id),
		LATERAL (SELECT `+sessionColumns+` FROM sessions WHERE id = u.id LIMIT 1) s`, ids)
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

// writeSessions copies the batch's new sessions and updates its changed
// ones with one statement, whatever the batch's size.
func writeSessions(ctx context.Context, tx *pipeTx, sessions []*Session) error {
	var fresh [][]any
	var started, described []*Session
	var u sessionUpdates
	for _, s := range sessions {
		switch {
		case s.isNew:
			fresh, started = append(fresh, s.values()), append(started, s)
		case s.dirty:
			u.add(s)
		}
		if s.described && !s.isNew {
			described = append(described, s)
		}
		s.isNew, s.dirty, s.described = false, false, false
	}
	if err := writeDescribed(ctx, tx, described); err != nil {
		return err
	}
	if len(fresh) > 0 {
		if _, err := tx.CopyFrom(ctx, pgx.Identifier{"sessions"}, sessionColumnNames,
			pgx.CopyFromRows(fresh)); err != nil {
			return fmt.Errorf("copy %d sessions: %w", len(fresh), err)
		}
		if err := claimStarted(ctx, tx, started); err != nil {
			return err
		}
	}
	if len(u.id) == 0 {
		return nil
	}
	// Queued with the batch's other writes, so prepared: a node's
	// connections plan every prepared statement with its values
	// (plan_cache_mode, node.go), as loadSessions' unprepared read is.
	tx.queue(fmt.Sprintf("update %d sessions", len(u.id)), `UPDATE sessions s SET status = u.status, transcript_file_id = u.transcript,
			recorded_steps = u.steps, observation_count = u.observations, dropped_actions = u.dropped,
			last_seq = u.last_seq, exit_code = u.exit_code, error = u.error, model = u.model, effort = u.effort,
			usage = u.usage::jsonb, total_cost = u.cost::numeric, billing = u.billing, door = u.door, ended_at = u.ended_at,
			updated_at = u.updated_at, received_at = u.received_at, cancel_requested_at = u.cancel_requested_at,
			superseded_steps = u.superseded, swept = u.swept
		FROM unnest($1::text[], $2::text[], $3::text[], $4::int[], $5::int[], $6::int[], $7::bigint[], $8::int[],
			$9::text[], $10::text[], $11::text[], $12::text[], $13::text[], $14::text[], $15::text[],
			$16::timestamptz[], $17::timestamptz[], $18::timestamptz[], $19::timestamptz[], $20::int[], $21::bool[])
			AS u(id, status, transcript, steps, observations, dropped, last_seq, exit_code, error, model, effort,
				usage, cost, billing, door, ended_at, updated_at, received_at, cancel_requested_at, superseded,
				swept)
		WHERE s.id = u.id`,
		u.id, u.status, u.transcript, u.steps, u.observations, u.dropped, u.lastSeq, u.exitCode, u.err, u.model,
		u.effort, u.usage, u.cost, u.billing, u.door, u.endedAt, u.updatedAt, u.received, u.cancelRequested,
		u.superseded, u.swept)
	return nil
}

// sessionUpdates are changed sessions as columns, one array per column.
// usage and cost travel as text: usage is cast to jsonb, cost to numeric
// from the shortest decimal that reads back as the reported float.
type sessionUpdates struct {
	id, status, transcript, err, model, effort, billing, door []string
	steps, observations, dropped, superseded                  []int
	lastSeq                                                   []int64
	exitCode                                                  []*int
	usage, cost                                               []*string
	endedAt, received, cancelRequested                        []*time.Time
	swept                                                     []bool
	updatedAt                                                 []time.Time
}

func (u *sessionUpdates) add(s *Session) {
	u.id, u.status, u.transcript = append(u.id, s.ID), append(u.status, s.Status), append(u.transcript, s.TranscriptFileID)
	u.steps, u.observations = append(u.steps, s.RecordedSteps), append(u.observations, s.observations)
	u.superseded, u.swept = append(u.superseded, s.superseded), append(u.swept, s.swept)
	u.dropped, u.lastSeq, u.exitCode = append(u.dropped, s.DroppedActions), append(u.lastSeq, s.LastSeq), append(u.exitCode, s.ExitCode)
	u.err, u.model, u.effort = append(u.err, s.Error), append(u.model, s.Model), append(u.effort, s.Effort)
	var usage *string
	if len(s.Usage) > 0 {
		t := string(s.Usage)
		usage = &t
	}
	u.usage, u.cost = append(u.usage, usage), append(u.cost, streams.CostText(s.TotalCost))
	u.billing, u.door = append(u.billing, s.Billing), append(u.door, s.Door)
	u.endedAt, u.updatedAt = append(u.endedAt, s.EndedAt), append(u.updatedAt, s.UpdatedAt)
	u.received, u.cancelRequested = append(u.received, s.received), append(u.cancelRequested, s.cancelRequested)
}

// writeDescribed writes the start's columns of sessions whose start came
// after their telemetry (or whose prompt's digest did), in one statement.
func writeDescribed(ctx context.Context, tx pgx.Tx, sessions []*Session) error {
	if len(sessions) == 0 {
		return nil
	}
	cols := make([]any, 14)
	text := make([][]string, 13)
	var started []time.Time
	for _, s := range sessions {
		for i, v := range []string{s.ID, s.App, s.Kind, s.Level, s.AppSessionRef, s.Workspace, s.PlanID, s.TaskID,
			s.StepID, s.ParentRunID, s.WorkerID, s.PromptDigest, s.Origin} {
			text[i] = append(text[i], v)
		}
		started = append(started, s.StartedAt)
	}
	for i, c := range text {
		cols[i] = c
	}
	cols[13] = started
	// Unprepared: planned with the batch's ids (see loadSessions).
	_, err := tx.Exec(ctx, `UPDATE sessions s SET app = u.app, kind = u.kind, level = u.level,
			app_session_ref = u.ref, workspace = u.workspace, plan_id = u.plan, task_id = u.task, step_id = u.step,
			parent_run_id = u.parent, worker_id = u.worker, prompt_digest = u.prompt, origin = u.origin,
			started_at = u.started
		FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[],
			$9::text[], $10::text[], $11::text[], $12::text[], $13::text[], $14::timestamptz[])
			AS u(id, app, kind, level, ref, workspace, plan, task, step, parent, worker, prompt, origin, started)
		WHERE s.id = u.id`, append([]any{pgx.QueryExecModeExec}, cols...)...)
	if err != nil {
		return fmt.Errorf("describe %d sessions: %w", len(sessions), err)
	}
	return nil
}
