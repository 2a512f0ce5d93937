package desktop

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// Claim is a won claim: the fencing token every later call must carry.
type Claim struct {
	Task           *Task     `json:"task"`
	Fence          uint64    `json:"fence"`
	LeaseExpiresAt time.Time `json:"leaseExpiresAt"`
}

// Lease is a heartbeat's answer.
type Lease struct {
	TaskID          string     `json:"taskId"`
	State           string     `json:"state"`
	LeaseValid      bool       `json:"leaseValid"`
	LeaseExpiresAt  *time.Time `json:"leaseExpiresAt,omitempty"`
	CancelRequested bool       `json:"cancelRequested"`
}

// StaleError is ErrStaleClaim with what the task looks like now.
type StaleError struct{ State string }

func (e *StaleError) Error() string {
	return "stale_claim: the task is " + e.State + " under another claim or none"
}
func (e *StaleError) Unwrap() error      { return ErrStaleClaim }
func staleErr(t *Task) error             { return &StaleError{State: t.State} }
func (t *Task) heldBy(fence uint64) bool { return Active(t.State) && t.Fence == fence }
func (t *Task) forRunner(r string) bool  { return t.RunnerID == "" || t.RunnerID == r }
func (t *Task) deadlinePassed(now time.Time) bool {
	return t.DeliverBy != nil && !t.DeliverBy.After(now)
}

// maxClaimRetries bounds retries when a message that changes nothing (a
// late heartbeat of nobody) moved the task's sequence under a claim.
const maxClaimRetries = 3

// Claim takes a queued task for this runner. Of many runners racing, the
// claim published first on the task's subjects with the sequence it read
// wins; every other gets ErrAlreadyClaimed. A claim of a task this runner
// holds already (claimed or running, its lease not run out) is its claim
// again, same fence and lease: a claim whose answer was lost and is asked
// again is not taken for another runner's win.
func (s *Service) Claim(ctx context.Context, id RunnerIdentity, taskID string) (*Claim, error) {
	r, err := s.registered(ctx, id)
	if err != nil {
		return nil, err
	}
	for range maxClaimRetries {
		t, err := s.task(ctx, id.Owner, taskID)
		if err != nil {
			return nil, err
		}
		switch {
		case t.leasedTo(id.RunnerID, s.now()):
			return &Claim{Task: t, Fence: t.Fence, LeaseExpiresAt: *t.LeaseExpiresAt}, nil
		case t.State != StateQueued:
			return nil, ErrAlreadyClaimed
		case !t.forRunner(id.RunnerID) || !r.Takes(t.Kind, TargetDesktop) || t.deadlinePassed(s.now()):
			return nil, ErrNotClaimable
		}
		m := &Message{Type: TypeClaimed, At: s.now(), Org: id.Org, Member: id.Member, TaskID: taskID, RunnerID: id.RunnerID}
		seq, err := s.publish(ctx, m, publishOpts{expect: &t.LastSeq})
		if errors.Is(err, ErrConflict) {
			continue
		}
		if err != nil {
			return nil, err
		}
		s.announceTask(t, m.At)
		return s.claimResult(ctx, id, taskID, seq)
	}
	return nil, ErrAlreadyClaimed
}

func (s *Service) claimResult(ctx context.Context, id RunnerIdentity, taskID string, fence uint64) (*Claim, error) {
	t, err := s.task(ctx, id.Owner, taskID)
	if err != nil {
		return nil, err
	}
	if !t.heldBy(fence) {
		return nil, ErrAlreadyClaimed
	}
	return &Claim{Task: t, Fence: fence, LeaseExpiresAt: *t.LeaseExpiresAt}, nil
}

// held reads a task this runner holds under fence, or a stale-claim error.
func (s *Service) held(ctx context.Context, id RunnerIdentity, taskID string, fence uint64) (*Task, error) {
	t, err := s.task(ctx, id.Owner, taskID)
	if err != nil {
		return nil, err
	}
	if !t.heldBy(fence) || t.ClaimedBy != id.RunnerID {
		return nil, staleErr(t)
	}
	return t, nil
}

// Heartbeat renews the lease of a held task for another LeaseTTL. Its answer
// carries cancelRequested.
func (s *Service) Heartbeat(ctx context.Context, id RunnerIdentity, taskID string, fence uint64) (*Lease, error) {
	if _, err := s.registered(ctx, id); err != nil {
		return nil, err
	}
	t, err := s.held(ctx, id, taskID, fence)
	if err != nil {
		return nil, err
	}
	m := &Message{Type: TypeHeartbeat, At: s.now(), Org: id.Org, Member: id.Member, TaskID: taskID, Fence: fence}
	if _, err := s.publish(ctx, m, publishOpts{}); err != nil {
		return nil, err
	}
	if t.State == StateClaimed {
		s.announceTask(t, m.At) // claimed → running
	}
	if t, err = s.held(ctx, id, taskID, fence); err != nil {
		return nil, err
	}
	return &Lease{TaskID: taskID, State: t.State, LeaseValid: true, LeaseExpiresAt: t.LeaseExpiresAt,
		CancelRequested: t.CancelRequested}, nil
}

// EventsReceipt says what a post of events did.
type EventsReceipt struct {
	TaskID     string `json:"taskId"`
	Accepted   int    `json:"accepted"`
	Duplicates int    `json:"duplicates"`
	LastSeq    int64  `json:"lastSeq"` // the highest event seq recorded for the task
	Lease
}

// PostEvents records ordered events of a held task; events whose seq was
// already recorded are dropped as duplicates. Events the projection could
// not store (dead-lettered as unstorable) are an *InvalidError: nothing of
// the post was recorded.
func (s *Service) PostEvents(ctx context.Context, id RunnerIdentity, taskID string, fence uint64, evs []RunnerEvent) (*EventsReceipt, error) {
	if err := ValidateEvents(evs); err != nil {
		return nil, err // a *streams.Rejection: its reason is the caller's error code
	}
	t, err := s.held(ctx, id, taskID, fence)
	if err != nil {
		return nil, err
	}
	before := t.LastEventSeq
	m := &Message{Type: TypeEvents, At: s.now(), Org: id.Org, Member: id.Member, TaskID: taskID, Fence: fence, Events: evs}
	if _, err := s.publish(ctx, m, publishOpts{}); err != nil {
		return nil, err
	}
	s.announceTask(t, m.At)
	if t, err = s.held(ctx, id, taskID, fence); err != nil {
		return nil, err
	}
	if last := evs[len(evs)-1].Seq; t.LastEventSeq < last {
		return nil, invalid(fmt.Sprintf("events not recorded: spine could not store this post (a value PostgreSQL refuses, "+
			"such as a number out of range in usage); the task's last recorded seq is still %d", t.LastEventSeq))
	}
	accepted := 0
	for _, e := range evs {
		if e.Seq > before {
			accepted++
			before = e.Seq
		}
	}
	return &EventsReceipt{TaskID: taskID, Accepted: accepted, Duplicates: len(evs) - accepted, LastSeq: t.LastEventSeq,
		Lease: Lease{TaskID: taskID, State: t.State, LeaseValid: true, LeaseExpiresAt: t.LeaseExpiresAt,
			CancelRequested: t.CancelRequested}}, nil
}

// Receipt is the durable answer to complete: stored in the log before it is given.
type Receipt struct {
	ReceiptID string    `json:"receiptId"`
	TaskID    string    `json:"taskId"`
	State     string    `json:"state"`
	At        time.Time `json:"at"`
}

// Complete ends a held task as done (or cancelled, after a cancel request).
// Completing again with the same fence returns the same receipt.
func (s *Service) Complete(ctx context.Context, id RunnerIdentity, taskID string, fence uint64, c Completion) (*Receipt, error) {
	t, err := s.task(ctx, id.Owner, taskID)
	if err != nil {
		return nil, err
	}
	if done := t.receipt(fence, id.RunnerID); done != nil {
		return done, nil
	}
	if !t.heldBy(fence) || t.ClaimedBy != id.RunnerID {
		return nil, staleErr(t)
	}
	c.ReceiptID = newID("rc-")
	m := &Message{Type: TypeCompleted, At: s.now(), Org: id.Org, Member: id.Member, TaskID: taskID, Fence: fence, Complete: &c}
	if err := m.prepare(); err != nil {
		return nil, err
	}
	if _, err := s.publish(ctx, m, publishOpts{}); err != nil {
		return nil, err
	}
	s.announceTask(t, m.At)
	if t, err = s.task(ctx, id.Owner, taskID); err != nil {
		return nil, err
	}
	if done := t.receipt(fence, id.RunnerID); done != nil {
		return done, nil
	}
	return nil, staleErr(t)
}

// receipt is the task's completion receipt if fence's claim completed it.
func (t *Task) receipt(fence uint64, runnerID string) *Receipt {
	if t.ReceiptID == "" || t.Fence != fence || t.ClaimedBy != runnerID || t.EndedAt == nil {
		return nil
	}
	return &Receipt{ReceiptID: t.ReceiptID, TaskID: t.ID, State: t.State, At: *t.EndedAt}
}

// announceTask tells the task's session page that it changed.
func (s *Service) announceTask(t *Task, at time.Time) {
	s.announce(Announcement{Kind: kindSession, SessionID: t.RemoteSessionID, TaskID: t.ID, Org: t.org, Member: t.member, At: at})
}

// NotHeldError: a runner speaks for a task of its member that it does not
// hold now (another runner's, ended, or its lease ran out).
type NotHeldError struct{ State string }

func (e *NotHeldError) Error() string {
	return "task_not_held: the task is " + e.State + " and not held by this runner"
}

// LinkSession links the spine session sessionID to taskID, which the runner
// must hold now: it claimed it, the task is claimed or running, and its
// lease has not run out. The session ingest calls it before it takes a
// runner's session.start, so the link is in the tasks log ahead of the
// start and, decided there in log order, ahead of the task's end:
// remoteSession.read then knows every session a task records before the
// recorder has projected any, and waits for them (docs/desktop.md#reading).
// A task that is not its member's (or none) is ErrUnknownTask, one answer;
// one of its member it does not hold is a *NotHeldError; a session linked
// to another task is ErrSessionLinked. Linking again what is linked is a
// no-op (a retried start).
func (s *Service) LinkSession(ctx context.Context, id RunnerIdentity, taskID, sessionID string) error {
	t, err := s.task(ctx, id.Owner, taskID)
	if err != nil {
		return err
	}
	if err := s.linked(ctx, id, taskID, sessionID); !errors.Is(err, errNotLinked) {
		return err
	}
	if !t.leasedTo(id.RunnerID, s.now()) {
		return &NotHeldError{State: t.State}
	}
	m := &Message{Type: TypeSessionLinked, ID: linkID(taskID, sessionID), At: s.now(), Org: id.Org, Member: id.Member,
		TaskID: taskID, RunnerID: id.RunnerID, Fence: t.Fence, RecordedSession: sessionID}
	if _, err := s.publish(ctx, m, publishOpts{}); err != nil {
		return err
	}
	s.announceTask(t, m.At)
	if err := s.linked(ctx, id, taskID, sessionID); !errors.Is(err, errNotLinked) {
		return err
	}
	if t, err = s.task(ctx, id.Owner, taskID); err != nil { // the projection refused it: the task ended first
		return err
	}
	return &NotHeldError{State: t.State}
}

var errNotLinked = errors.New("not linked")

// RunnerSessions says which of sessionIDs the runner may write to: those
// linked to it (LinkSession took its start for a task it held) whose
// recorded row, once there is one, is that start's: the runner's id and
// the task's (a session id its member started first stays the member's).
func (s *Service) RunnerSessions(ctx context.Context, id RunnerIdentity, sessionIDs []string) (map[string]bool, error) {
	rows, err := s.cfg.Pool.Query(ctx, `SELECT l.session_id FROM desktop_task_sessions l
		LEFT JOIN sessions s ON s.id = l.session_id
		WHERE l.session_id = ANY($1) AND l.runner_id = $2 AND l.org = $3 AND l.member = $4
		AND (s.id IS NULL OR (s.worker_id = l.runner_id AND s.task_id = l.task_id))`, sessionIDs, id.RunnerID, id.Org, id.Member)
	if err != nil {
		return nil, fmt.Errorf("read runner's sessions: %w", err)
	}
	out := map[string]bool{}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	for _, sid := range ids {
		out[sid] = true
	}
	if err != nil {
		return nil, fmt.Errorf("read runner's sessions: %w", err)
	}
	return out, nil
}

// linked is nil when sessionID is linked to taskID for this runner,
// ErrSessionLinked when it is linked to anything else, errNotLinked when
// it is linked to nothing.
func (s *Service) linked(ctx context.Context, id RunnerIdentity, taskID, sessionID string) error {
	var task, runner string
	err := s.cfg.Pool.QueryRow(ctx, `SELECT task_id, runner_id FROM desktop_task_sessions WHERE session_id = $1`,
		sessionID).Scan(&task, &runner)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return errNotLinked
	case err != nil:
		return fmt.Errorf("read link of %s: %w", sessionID, err)
	case task == taskID && runner == id.RunnerID:
		return nil
	}
	return ErrSessionLinked
}

// linkID is the link's message id: one per task and session, so a retried
// start publishes it once.
func linkID(taskID, sessionID string) string {
	sum := sha256.Sum256([]byte(taskID + "/" + sessionID))
	return "ln-" + hex.EncodeToString(sum[:16])
}

// leasedTo: runner holds t now (active, claimed by it, its lease not over).
func (t *Task) leasedTo(runner string, now time.Time) bool {
	return Active(t.State) && t.ClaimedBy == runner && t.LeaseExpiresAt != nil && t.LeaseExpiresAt.After(now)
}
