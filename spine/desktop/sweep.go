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
	Conflicts   int `json:"conflicts"` // another instance (or a late heartbeat) got there first
}

const sweepBatch = 500

// Sweep interrupts tasks whose lease ran out before now and expires queued
// tasks whose deliverBy passed. Each transition is published with the
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
	return res, nil
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

func (s *Service) dueTasks(ctx context.Context, where string, now time.Time) ([]Task, error) {
	rows, err := s.cfg.Pool.Query(ctx, `SELECT `+taskColumns+` FROM desktop_tasks WHERE `+where+` ORDER BY id LIMIT `+
		fmt.Sprint(sweepBatch), now)
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
