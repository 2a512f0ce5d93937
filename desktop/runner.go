package desktop

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/spinehq/spine/streams"
)

// RunnerIdentity is who a verified runner token speaks for: the member who
// minted it (its Owner) and the machine it was minted for.
type RunnerIdentity struct {
	streams.Owner
	RunnerID  string // the machine the token was minted for
	TokenID   string
	ExpiresAt time.Time
}

// Registration is register's answer: the runner and the protocol's figures.
type Registration struct {
	Runner            *Runner `json:"runner"`
	ProtocolVersion   int     `json:"protocolVersion"`
	HeartbeatSeconds  int     `json:"heartbeatSeconds"`
	LeaseSeconds      int     `json:"leaseSeconds"`
	PresenceWindowSec int     `json:"presenceWindowSeconds"`
	WorkPath          string  `json:"workPath"`
	EventsPath        string  `json:"eventsPath"`
}

// Register records (or updates, at once) the runner's inventory and marks it seen.
func (s *Service) Register(ctx context.Context, id RunnerIdentity, inv Inventory) (*Registration, error) {
	m := &Message{Type: TypeRegistered, At: s.now(), Org: id.Org, Member: id.Member, RunnerID: id.RunnerID, Runner: &inv}
	if err := m.prepare(); err != nil {
		return nil, err // a *streams.Rejection: its reason is the caller's error code
	}
	if _, err := s.publish(ctx, m, publishOpts{}); err != nil {
		return nil, err
	}
	s.markSeen(id.RunnerID, m.At)
	r, err := s.runner(ctx, id.Owner, id.RunnerID)
	if errors.Is(err, ErrUnknownRunner) {
		return nil, ErrNotClaimable // the runner id belongs to another member
	}
	if err != nil {
		return nil, err
	}
	return &Registration{Runner: r, ProtocolVersion: ProtocolVersion, HeartbeatSeconds: int(HeartbeatInterval.Seconds()),
		LeaseSeconds: int(LeaseTTL.Seconds()), PresenceWindowSec: int(PresenceWindow.Seconds()),
		WorkPath: "/v1/desktop-runner/work", EventsPath: "/v1/desktop-runner/events"}, nil
}

func (s *Service) markSeen(runnerID string, at time.Time) {
	s.seenMu.Lock()
	defer s.seenMu.Unlock()
	s.seen[runnerID] = at
}

// touch marks the runner seen, at most once per SeenThrottle per instance:
// presence is a 10-minute window, so lastSeen need not move every request.
func (s *Service) touch(ctx context.Context, r *Runner) {
	now := s.now()
	s.seenMu.Lock()
	last, ok := s.seen[r.ID]
	if !ok || last.Before(r.LastSeen) {
		last = r.LastSeen
	}
	due := now.Sub(last) >= SeenThrottle
	if due {
		s.seen[r.ID] = now
	}
	s.seenMu.Unlock()
	if !due {
		return
	}
	m := &Message{Type: TypeSeen, At: now, Org: r.org, Member: r.member, RunnerID: r.ID}
	if _, err := s.publish(ctx, m, publishOpts{}); err != nil {
		s.log.Warn("presence update failed", "runner_id", r.ID, "err", err)
	}
}

// registered reads the calling runner, or ErrNotRegistered, and marks it seen.
func (s *Service) registered(ctx context.Context, id RunnerIdentity) (*Runner, error) {
	r, err := s.runner(ctx, id.Owner, id.RunnerID)
	if errors.Is(err, ErrUnknownRunner) {
		return nil, ErrNotRegistered
	}
	if err != nil {
		return nil, err
	}
	s.touch(ctx, r)
	return r, nil
}

// Work lists the queued tasks this runner may claim: its member's, meant for
// it or for any machine, of a kind it declared, deadline not passed.
func (s *Service) Work(ctx context.Context, id RunnerIdentity) ([]Task, error) {
	r, err := s.registered(ctx, id)
	if err != nil {
		return nil, err
	}
	rows, err := s.cfg.Pool.Query(ctx, `SELECT `+taskColumns+` FROM desktop_tasks
		WHERE org = $1 AND member = $2 AND state = 'queued' AND runner_id IN ('', $3) AND kind = ANY($4)
		AND (deliver_by IS NULL OR deliver_by > $5) ORDER BY created_at, id LIMIT 100`,
		id.Org, id.Member, id.RunnerID, r.Capabilities, s.now())
	if err != nil {
		return nil, fmt.Errorf("list work: %w", err)
	}
	tasks, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (Task, error) {
		t, err := scanTask(row)
		if err != nil {
			return Task{}, err
		}
		return *t, nil
	})
	if err != nil {
		return nil, fmt.Errorf("list work: %w", err)
	}
	out := tasks[:0]
	for _, t := range tasks {
		if r.Takes(t.Kind, TargetDesktop) {
			out = append(out, t)
		}
	}
	return out, nil
}
