package desktop

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/spinehq/spine/streams"
)

// Rejection reasons of this stream, beyond the streams.Reason* set.
const (
	ReasonUnknownTask   = "unknown_task"
	ReasonDuplicateTask = "duplicate_task"
	ReasonUnknownRunner = "unknown_runner"
)

// Projection applies SPINE_TASKS messages to the desktop tables. It is the
// streams.Handler of the "tasks" projector. Transitions are decided here, in
// log order: a heartbeat, events or completion whose fence is not the task's
// current claim, or that arrives after the task ended, changes nothing but
// the task's last sequence.
//
// Each message is applied under its own savepoint: one the rules refuse,
// or whose rows PostgreSQL refuses, leaves no row behind (never a task
// without its session). Every message on a task's subjects, refused or
// not, moves the task's last_seq, because claims and the sweeper publish
// expecting the last sequence on those subjects.
type Projection struct{}

// Apply implements streams.Handler.
func (Projection) Apply(ctx context.Context, tx pgx.Tx, msgs []streams.Message) ([]error, error) {
	results := make([]error, len(msgs))
	for i, raw := range msgs {
		rej, err := applyOne(ctx, tx, raw)
		if err != nil {
			return nil, err
		}
		if rej == nil {
			continue
		}
		results[i] = rej
		if err := touchTask(ctx, tx, raw); err != nil {
			return nil, err
		}
	}
	return results, nil
}

// Isolated implements streams.Isolator: a message the projector isolated
// (one that made Apply fail or panic) still moves its task's last_seq, or
// every later claim, cancel and sweep would conflict with the log for ever.
func (Projection) Isolated(ctx context.Context, tx pgx.Tx, raw streams.Message) error {
	return touchTask(ctx, tx, raw)
}

// errNoTranscript: events for a task whose remote session is not its owner's.
var errNoTranscript = errors.New("no remote session of the task's owner")

// applyOne applies one message inside a savepoint, or says why not.
func applyOne(ctx context.Context, tx pgx.Tx, raw streams.Message) (*streams.Rejection, error) {
	m, err := Decode(raw.Subject, raw.Data)
	if err != nil {
		if rej, ok := streams.AsRejection(err); ok {
			return rej, nil
		}
		return streams.Reject(streams.ReasonMalformed, "%v", err), nil
	}
	sp, err := tx.Begin(ctx)
	if err != nil {
		return nil, fmt.Errorf("savepoint: %w", err)
	}
	defer sp.Rollback(ctx) // a no-op after Commit
	rej, err := apply(ctx, sp, m, raw.Seq)
	var pgErr *pgconn.PgError
	switch {
	case errors.Is(err, errNoTranscript):
		return streams.Reject(streams.ReasonUnknownSession, "task %s: %v", m.TaskID, err), nil
	case streams.IsDataError(err) && errors.As(err, &pgErr):
		return streams.Reject(streams.ReasonUnstorable, "PostgreSQL refused its rows: SQLSTATE %s: %s", pgErr.Code, pgErr.Message), nil
	case err != nil:
		return nil, fmt.Errorf("apply %s %s: %w", m.Type, m.ID, err)
	case rej != nil:
		return rej, nil
	}
	if err := sp.Commit(ctx); err != nil {
		return nil, fmt.Errorf("release savepoint: %w", err)
	}
	return nil, nil
}

// touchTask moves last_seq of the task whose subject raw was published on
// (a refused message counts for Nats-Expected-Last-Subject-Sequence too).
func touchTask(ctx context.Context, tx pgx.Tx, raw streams.Message) error {
	rest, ok := strings.CutPrefix(raw.Subject, subjectTask)
	taskID, _, _ := strings.Cut(rest, ".")
	if !ok || taskID == "" {
		return nil
	}
	_, err := tx.Exec(ctx, `UPDATE desktop_tasks SET last_seq = greatest(last_seq, $2) WHERE id = $1`, taskID, int64(raw.Seq))
	if err != nil {
		return fmt.Errorf("advance last_seq of %s: %w", taskID, err)
	}
	return nil
}

func apply(ctx context.Context, tx pgx.Tx, m *Message, seq uint64) (*streams.Rejection, error) {
	switch m.Type {
	case TypeRegistered:
		return applyRegistered(ctx, tx, m)
	case TypeSeen:
		return applySeen(ctx, tx, m)
	case TypeQueued:
		return applyQueued(ctx, tx, m, seq)
	}
	t, err := lockTask(ctx, tx, m.TaskID)
	if errors.Is(err, ErrUnknownTask) {
		return streams.Reject(ReasonUnknownTask, "task %s", m.TaskID), nil
	}
	if err != nil {
		return nil, err
	}
	if t.org != m.Org || t.member != m.Member {
		return streams.Reject(streams.ReasonOwnerMismatch, "task %s belongs to another member", m.TaskID), nil
	}
	changed, err := transition(ctx, tx, t, m, seq)
	if err != nil {
		return nil, err
	}
	return nil, saveTask(ctx, tx, t, m, seq, changed)
}

// transition changes t (in memory, and the transcript in tx) for m. It
// reports whether anything the session shows changed.
func transition(ctx context.Context, tx pgx.Tx, t *Task, m *Message, seq uint64) (bool, error) {
	holds := Active(t.State) && m.Fence == t.Fence
	switch m.Type {
	case TypeClaimed:
		if t.State != StateQueued {
			return false, nil
		}
		t.State, t.Fence, t.ClaimedBy = StateClaimed, seq, m.RunnerID
		t.LeaseExpiresAt = ptr(m.At.Add(LeaseTTL))
	case TypeHeartbeat:
		if !holds {
			return false, nil
		}
		t.State, t.LeaseExpiresAt = StateRunning, ptr(m.At.Add(LeaseTTL))
	case TypeEvents:
		if !holds {
			return false, nil
		}
		t.State, t.LeaseExpiresAt = StateRunning, ptr(m.At.Add(LeaseTTL))
		return true, appendEvents(ctx, tx, t, m)
	case TypeSessionLinked:
		if !holds || t.ClaimedBy != m.RunnerID {
			return false, nil
		}
		return true, linkSession(ctx, tx, t, m)
	case TypeCancelRequested:
		if !Active(t.State) || t.CancelRequested {
			return false, nil
		}
		t.CancelRequested = true
	case TypeCompleted:
		if !holds {
			return false, nil
		}
		t.State, t.Error, t.ReceiptID = m.Complete.Status, m.Complete.Error, m.Complete.ReceiptID
		return true, end(ctx, tx, t, m)
	case TypeInterrupted:
		if !holds || t.LeaseExpiresAt == nil || t.LeaseExpiresAt.After(m.At) {
			return false, nil
		}
		t.State, t.Error = StateInterrupted, m.Reason
		return true, end(ctx, tx, t, m)
	case TypeExpired, TypeCancelled:
		if t.State != StateQueued {
			return false, nil
		}
		t.State, t.Error = StateExpired, m.Reason
		if m.Type == TypeCancelled {
			t.State = StateCancelled
		}
		return true, end(ctx, tx, t, m)
	}
	return true, nil
}

// end ends t and adds its end to the transcript: kind "end", its state as
// data.status and its error (or end reason) as text, so a
// task that never ran (refused, expired, cancelled while queued) still
// reads with its reason.
func end(ctx context.Context, tx pgx.Tx, t *Task, m *Message) error {
	t.LeaseExpiresAt, t.EndedAt = nil, ptr(m.At)
	return insertEntries(ctx, tx, streams.Owner{Org: t.org, Member: t.member}, t.RemoteSessionID, t.ID, m.At,
		[]RunnerEvent{{Type: KindEnd, Text: t.Error, Status: t.State}})
}

// linkSession records that the runner holding t records m's session for
// it, after the task's earlier links (the task's row is locked: one link
// at a time). A session links to one task: a second link of it changes
// nothing.
func linkSession(ctx context.Context, tx pgx.Tx, t *Task, m *Message) error {
	_, err := tx.Exec(ctx, `INSERT INTO desktop_task_sessions (session_id, task_id, remote_session_id, org, member, runner_id, at, pos)
		SELECT $1, $2, $3, $4, $5, $6, $7, coalesce(max(pos), 0) + 1 FROM desktop_task_sessions WHERE task_id = $2
		ON CONFLICT (session_id) DO NOTHING`,
		m.RecordedSession, t.ID, t.RemoteSessionID, t.org, t.member, m.RunnerID, m.At)
	return err
}

func ptr[T any](v T) *T { return &v }

const taskColumns = `id, org, member, kind, remote_session_id, runner_id, title, instructions, local_session_id,
	state, deliver_by, fence, claimed_by, lease_expires_at, cancel_requested, last_event_seq, last_seq, error,
	receipt_id, created_at, updated_at, ended_at, app, workspace`

func scanTask(row pgx.Row) (*Task, error) {
	var t Task
	var fence, last int64
	err := row.Scan(&t.ID, &t.org, &t.member, &t.Kind, &t.RemoteSessionID, &t.RunnerID, &t.Title, &t.Instructions,
		&t.LocalSessionID, &t.State, &t.DeliverBy, &fence, &t.ClaimedBy, &t.LeaseExpiresAt, &t.CancelRequested,
		&t.LastEventSeq, &last, &t.Error, &t.ReceiptID, &t.CreatedAt, &t.UpdatedAt, &t.EndedAt, &t.App, &t.Workspace)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, ErrUnknownTask
	}
	t.Fence, t.LastSeq = uint64(fence), uint64(last)
	return &t, err
}

func lockTask(ctx context.Context, tx pgx.Tx, id string) (*Task, error) {
	return scanTask(tx.QueryRow(ctx, `SELECT `+taskColumns+` FROM desktop_tasks WHERE id = $1 FOR UPDATE`, id))
}

// saveTask writes t back and, when the session shows the change, the
// remote session's state and activity.
func saveTask(ctx context.Context, tx pgx.Tx, t *Task, m *Message, seq uint64, changed bool) error {
	if changed {
		t.UpdatedAt = m.At
	}
	_, err := tx.Exec(ctx, `UPDATE desktop_tasks SET local_session_id = $2, state = $3, fence = $4, claimed_by = $5,
		lease_expires_at = $6, cancel_requested = $7, last_event_seq = $8, last_seq = $9, error = $10,
		receipt_id = $11, updated_at = $12, ended_at = $13 WHERE id = $1`,
		t.ID, t.LocalSessionID, t.State, int64(t.Fence), t.ClaimedBy, t.LeaseExpiresAt, t.CancelRequested,
		t.LastEventSeq, int64(seq), t.Error, t.ReceiptID, t.UpdatedAt, t.EndedAt)
	if err != nil || !changed {
		return err
	}
	_, err = tx.Exec(ctx, `UPDATE remote_sessions SET
		state = CASE WHEN latest_task_id = $2 THEN $3 ELSE state END,
		runner_id = CASE WHEN $4 <> '' THEN $4 ELSE runner_id END,
		local_session_id = CASE WHEN local_session_id = '' THEN $5 ELSE local_session_id END,
		version = $6, last_activity_at = greatest(last_activity_at, $7) WHERE id = $1`,
		t.RemoteSessionID, t.ID, t.State, t.ClaimedBy, t.LocalSessionID, int64(seq), m.At)
	return err
}

func applyQueued(ctx context.Context, tx pgx.Tx, m *Message, seq uint64) (*streams.Rejection, error) {
	spec := m.Task
	tag, err := tx.Exec(ctx, `INSERT INTO desktop_tasks (id, org, member, kind, remote_session_id, runner_id, title,
		instructions, local_session_id, state, deliver_by, last_seq, created_at, updated_at, app, workspace)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, 'queued', $10, $11, $12, $12, $13, $14) ON CONFLICT DO NOTHING`,
		m.TaskID, m.Org, m.Member, spec.Kind, spec.RemoteSessionID, spec.RunnerID, spec.Title, spec.Instructions,
		spec.LocalSessionID, spec.DeliverBy, int64(seq), m.At, spec.App, spec.Workspace)
	if err != nil {
		return nil, err
	}
	if tag.RowsAffected() == 0 {
		return streams.Reject(ReasonDuplicateTask, "task %s was already queued", m.TaskID), nil
	}
	if rej, err := upsertSession(ctx, tx, m, seq); rej != nil || err != nil {
		return rej, err
	}
	return nil, insertEntries(ctx, tx, streams.Owner{Org: m.Org, Member: m.Member}, spec.RemoteSessionID, m.TaskID, m.At,
		[]RunnerEvent{{Seq: 0, Type: "prompt", Text: spec.Instructions}})
}

func upsertSession(ctx context.Context, tx pgx.Tx, m *Message, seq uint64) (*streams.Rejection, error) {
	spec := m.Task
	if spec.NewSession {
		tag, err := tx.Exec(ctx, `INSERT INTO remote_sessions (id, org, member, target, title, runner_id, latest_task_id,
			state, tasks, version, created_at, last_activity_at) VALUES ($1, $2, $3, $4, $5, $6, $7, 'queued', 1, $8, $9, $9)
			ON CONFLICT DO NOTHING`, spec.RemoteSessionID, m.Org, m.Member, spec.Target, spec.Title, spec.RunnerID,
			m.TaskID, int64(seq), m.At)
		if err == nil && tag.RowsAffected() == 0 {
			return streams.Reject(ReasonDuplicateTask, "remote session %s exists", spec.RemoteSessionID), nil
		}
		return nil, err
	}
	tag, err := tx.Exec(ctx, `UPDATE remote_sessions SET latest_task_id = $4, state = 'queued', tasks = tasks + 1,
		version = $5, last_activity_at = greatest(last_activity_at, $6)
		WHERE id = $1 AND org = $2 AND member = $3`, spec.RemoteSessionID, m.Org, m.Member, m.TaskID, int64(seq), m.At)
	if err == nil && tag.RowsAffected() == 0 {
		return streams.Reject(streams.ReasonUnknownSession, "remote session %s", spec.RemoteSessionID), nil
	}
	return nil, err
}

// appendEvents adds the events t has not seen (seq above its last) to the
// transcript, in order; a session_id event names the desktop's session.
func appendEvents(ctx context.Context, tx pgx.Tx, t *Task, m *Message) error {
	var fresh []RunnerEvent
	for _, e := range m.Events {
		if e.Seq <= t.LastEventSeq {
			continue // a duplicate: the first copy was recorded
		}
		t.LastEventSeq = e.Seq
		if e.Type == EventSessionID && t.LocalSessionID == "" {
			t.LocalSessionID = e.SessionID
		}
		fresh = append(fresh, e)
	}
	return insertEntries(ctx, tx, streams.Owner{Org: t.org, Member: t.member}, t.RemoteSessionID, t.ID, m.At, fresh)
}

func insertEntries(ctx context.Context, tx pgx.Tx, owner streams.Owner, sessionID, taskID string, at time.Time, evs []RunnerEvent) error {
	if len(evs) == 0 {
		return nil
	}
	var pos int64
	err := tx.QueryRow(ctx, `UPDATE remote_sessions SET events = events + $2 WHERE id = $1 AND org = $3 AND member = $4
		RETURNING events - $2`, sessionID, len(evs), owner.Org, owner.Member).Scan(&pos)
	if errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("%w: %s", errNoTranscript, sessionID)
	}
	if err != nil {
		return fmt.Errorf("advance transcript of %s: %w", sessionID, err)
	}
	rows := make([][]any, len(evs))
	for i, e := range evs {
		rows[i] = []any{sessionID, pos + int64(i) + 1, taskID, e.Seq, e.Type, e.Text, entryData(e), at}
	}
	_, err = tx.CopyFrom(ctx, pgx.Identifier{"desktop_task_events"},
		[]string{"remote_session_id", "pos", "task_id", "seq", "kind", "text", "data", "at"}, pgx.CopyFromRows(rows))
	return err
}

// entryData is an event's fields beyond its text, or nil.
func entryData(e RunnerEvent) any {
	d := map[string]any{}
	if e.SessionID != "" {
		d["sessionId"] = e.SessionID
	}
	if len(e.Usage) > 0 {
		d["usage"] = json.RawMessage(e.Usage)
	}
	if e.Status != "" {
		d["status"] = e.Status
	}
	if e.Error != "" {
		d["error"] = e.Error
	}
	if len(d) == 0 {
		return nil
	}
	b, _ := json.Marshal(d)
	return string(b)
}

func applyRegistered(ctx context.Context, tx pgx.Tx, m *Message) (*streams.Rejection, error) {
	inv := m.Runner
	apps, _ := json.Marshal(nonNil(inv.Apps))
	caps, _ := json.Marshal(nonNil(inv.Capabilities))
	targets, _ := json.Marshal(nonNil(inv.ExecutionTargets))
	tag, err := tx.Exec(ctx, `INSERT INTO desktop_runners (id, org, member, machine, apps, capabilities, protocol_version,
		execution_targets, registered_at, last_seen) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $9)
		ON CONFLICT (id) DO UPDATE SET machine = $4, apps = $5, capabilities = $6, protocol_version = $7,
		execution_targets = $8, registered_at = $9, last_seen = greatest(desktop_runners.last_seen, $9)
		WHERE desktop_runners.org = $2 AND desktop_runners.member = $3`,
		m.RunnerID, m.Org, m.Member, inv.Machine, string(apps), string(caps), inv.ProtocolVersion, string(targets), m.At)
	if err == nil && tag.RowsAffected() == 0 {
		return streams.Reject(streams.ReasonOwnerMismatch, "runner %s belongs to another member", m.RunnerID), nil
	}
	return nil, err
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func applySeen(ctx context.Context, tx pgx.Tx, m *Message) (*streams.Rejection, error) {
	tag, err := tx.Exec(ctx, `UPDATE desktop_runners SET last_seen = greatest(last_seen, $4)
		WHERE id = $1 AND org = $2 AND member = $3`, m.RunnerID, m.Org, m.Member, m.At)
	if err == nil && tag.RowsAffected() == 0 {
		return streams.Reject(ReasonUnknownRunner, "runner %s", m.RunnerID), nil
	}
	return nil, err
}
