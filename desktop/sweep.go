package desktop

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// SweepResult counts what one sweep did.
type SweepResult struct {
	Interrupted int `json:"interrupted"`
	Expired     int `json:"expired"`
	RunnerGone  int `json:"runnerGone"` // expired because their machine left
	Conflicts   int `json:"conflicts"`  // another instance (or a late heartbeat) got there first
}

const sweepBatch = 500

// Sweep interrupts tasks whose lease ran out before now, expires queued
// tasks whose deliverBy passed, and expires queued tasks without a deliverBy
// whose machine has not been seen for the presence window (error
// "runner_gone: …": nothing would ever claim them). Each transition is published with the
// sequence the sweep read, so of two spine instances sweeping at once only
// one transition lands, and a heartbeat that arrived meanwhile wins.
func (s *Service) Sweep(ctx context.Context, now time.Time) (SweepResult, error) {
	var res SweepResult
	lost, err := s.dueTasks(ctx, `state IN ('claimed', 'running') AND lease_expires_at <= $1`, now)
	if err != nil {
		return res, err
	}
	for _, t := range lost {
		reason := fmt.Sprintf("lease_lost: no heartbeat within %s (lease ended %s)", LeaseTTL, t.LeaseExpiresAt.UTC().Format(time.RFC3339))
		m := &Message{Type: TypeInterrupted, At: now, TaskID: t.ID, Fence: t.Fence, Reason: reason}
		s.sweepOne(ctx, t, m, &res.Interrupted, &res.Conflicts)
	}
	late, err := s.dueTasks(ctx, `state = 'queued' AND deliver_by <= $1`, now)
	if err != nil {
		return res, err
	}
	for _, t := range late {
		reason := "expired: nobody claimed it by deliverBy " + t.DeliverBy.UTC().Format(time.RFC3339)
		m := &Message{Type: TypeExpired, At: now, TaskID: t.ID, Reason: reason}
		s.sweepOne(ctx, t, m, &res.Expired, &res.Conflicts)
	}
	return res, s.sweepGone(ctx, now, &res)
}

// sweepGone expires queued tasks meant for a machine that left: no
// deliverBy means the member asked for now, and now has passed.
func (s *Service) sweepGone(ctx context.Context, now time.Time, res *SweepResult) error {
	gone, err := s.dueTasks(ctx, `state = 'queued' AND deliver_by IS NULL AND runner_id <> '' AND NOT EXISTS (
		SELECT 1 FROM desktop_runners r WHERE r.id = desktop_tasks.runner_id AND r.last_seen > $1)`, now.Add(-PresenceWindow))
	if err != nil {
		return err
	}
	for _, t := range gone {
		reason := fmt.Sprintf("runner_gone: its machine (runner %s) was not seen for %s, so nothing will claim it; "+
			"start `spine runner` there and send again, or pass deliverBy to wait", t.RunnerID, PresenceWindow)
		m := &Message{Type: TypeExpired, At: now, TaskID: t.ID, Reason: reason}
		s.sweepOne(ctx, t, m, &res.RunnerGone, &res.Conflicts)
	}
	return nil
}

func (s *Service) sweepOne(ctx context.Context, t Task, m *Message, done, conflicts *int) {
	m.Org, m.Member = t.org, t.member
	_, err := s.publish(ctx, m, publishOpts{expect: &t.LastSeq})
	switch {
	case errors.Is(err, ErrConflict):
		*conflicts++
	case err != nil:
		s.log.Warn("sweep transition failed; the next sweep retries", "task_id", t.ID, "type", m.Type, "err", err)
	default:
		*done++
		s.announceTask(&t, m.At)
	}
}

// dueTasks lists tasks matching where, whose $1 is at.
func (s *Service) dueTasks(ctx context.Context, where string, at time.Time) ([]Task, error) {
	rows, err := s.cfg.Pool.Query(ctx, `SELECT `+taskColumns+` FROM desktop_tasks WHERE `+where+` ORDER BY id LIMIT `+
		fmt.Sprint(sweepBatch), at)
	if err != nil {
		return nil, fmt.Errorf("sweep: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Task, error) {
		t, err := scanTask(r)
		if err != nil {
			return Task{}, err
		}
		return *t, nil
	})
	if err != nil {
		return nil, fmt.Errorf("sweep: %w", err)
	}
	return out, nil
}

func (s *Service) sweepLoop(ctx context.Context) {
	t := time.NewTicker(s.cfg.SweepInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if _, err := s.Sweep(ctx, s.now()); err != nil && ctx.Err() == nil {
				s.log.Warn("sweep failed", "err", err)
			}
		}
	}
}
