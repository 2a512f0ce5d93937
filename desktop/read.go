package desktop

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/spinehq/spine/streams"
)

// task reads one of owner's tasks.
func (s *Service) task(ctx context.Context, owner streams.Owner, id string) (*Task, error) {
	if !streams.ValidID(id) {
		return nil, ErrUnknownTask // and PostgreSQL never sees a NUL in a path
	}
	t, err := scanTask(s.cfg.Pool.QueryRow(ctx, `SELECT `+taskColumns+` FROM desktop_tasks
		WHERE id = $1 AND org = $2 AND member = $3`, id, owner.Org, owner.Member))
	if err != nil && !errors.Is(err, ErrUnknownTask) {
		return nil, fmt.Errorf("read task %s: %w", id, err)
	}
	return t, err
}

const runnerColumns = `id, org, member, machine, apps, capabilities, protocol_version, execution_targets, registered_at, last_seen`

func (s *Service) scanRunner(row pgx.Row) (*Runner, error) {
	var r Runner
	err := row.Scan(&r.ID, &r.org, &r.member, &r.Machine, &r.Apps, &r.Capabilities, &r.ProtocolVersion,
		&r.ExecutionTargets, &r.RegisteredAt, &r.LastSeen)
	if err != nil {
		return nil, err
	}
	r.Present = s.now().Sub(r.LastSeen) < PresenceWindow
	return &r, nil
}

// runner reads one of owner's runners, or ErrUnknownRunner.
func (s *Service) runner(ctx context.Context, owner streams.Owner, id string) (*Runner, error) {
	r, err := s.scanRunner(s.cfg.Pool.QueryRow(ctx, `SELECT `+runnerColumns+` FROM desktop_runners
		WHERE id = $1 AND org = $2 AND member = $3`, id, owner.Org, owner.Member))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, ErrUnknownRunner
	}
	if err != nil {
		return nil, fmt.Errorf("read runner %s: %w", id, err)
	}
	return r, nil
}

// Runners lists owner's runners, most recently seen first, with presence.
func (s *Service) Runners(ctx context.Context, owner streams.Owner) ([]Runner, error) {
	rows, err := s.cfg.Pool.Query(ctx, `SELECT `+runnerColumns+` FROM desktop_runners
		WHERE org = $1 AND member = $2 ORDER BY last_seen DESC, id LIMIT 100`, owner.Org, owner.Member)
	if err != nil {
		return nil, fmt.Errorf("list runners: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Runner, error) {
		rr, err := s.scanRunner(r)
		if err != nil {
			return Runner{}, err
		}
		return *rr, nil
	})
	if err != nil {
		return nil, fmt.Errorf("list runners: %w", err)
	}
	return out, nil
}

const sessionColumns = `s.id, s.target, s.title, s.runner_id, coalesce(r.machine, ''), s.local_session_id, s.latest_task_id,
	s.state, s.tasks, s.version, s.created_at, s.last_activity_at, coalesce(t.error, '')`

const sessionFrom = ` FROM remote_sessions s
	LEFT JOIN desktop_runners r ON r.id = s.runner_id
	LEFT JOIN desktop_tasks t ON t.id = s.latest_task_id`

func (s *Service) scanSession(row pgx.Row) (*Session, error) {
	var ss Session
	var version int64
	err := row.Scan(&ss.ID, &ss.Target, &ss.Title, &ss.RunnerID, &ss.Machine, &ss.LocalSessionID, &ss.LatestTaskID,
		&ss.State, &ss.Tasks, &version, &ss.CreatedAt, &ss.LastActivityAt, &ss.Error)
	if err != nil {
		return nil, err
	}
	ss.Version = uint64(version)
	ss.URL = s.SessionURL(ss.ID)
	return &ss, nil
}

// SessionURL is the session's page on spine.
func (s *Service) SessionURL(id string) string { return s.cfg.BaseURL + "/ui/remote/" + id }

// Session reads one of owner's remote sessions, or ErrUnknownSession (also
// for another member's: the two are one answer).
func (s *Service) Session(ctx context.Context, owner streams.Owner, id string) (*Session, error) {
	return s.session(ctx, s.cfg.Pool, owner, id)
}

func (s *Service) session(ctx context.Context, q streams.Querier, owner streams.Owner, id string) (*Session, error) {
	if !streams.ValidID(id) {
		return nil, ErrUnknownSession
	}
	ss, err := s.scanSession(q.QueryRow(ctx, `SELECT `+sessionColumns+sessionFrom+`
		WHERE s.id = $1 AND s.org = $2 AND s.member = $3`, id, owner.Org, owner.Member))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, ErrUnknownSession
	}
	if err != nil {
		return nil, fmt.Errorf("read remote session %s: %w", id, err)
	}
	return ss, nil
}

// Sessions lists up to limit of owner's remote sessions after the cursor
// (the zero cursor: from the start), most recently active first.
func (s *Service) Sessions(ctx context.Context, owner streams.Owner, after SessionCursor, limit int) ([]Session, error) {
	where, args := `WHERE s.org = $1 AND s.member = $2`, []any{owner.Org, owner.Member, limit}
	if after != (SessionCursor{}) {
		where += ` AND (s.last_activity_at, s.id) < ($4, $5)`
		args = append(args, after.At, after.ID)
	}
	rows, err := s.cfg.Pool.Query(ctx, `SELECT `+sessionColumns+sessionFrom+` `+where+`
		ORDER BY s.last_activity_at DESC, s.id DESC LIMIT $3`, args...)
	if err != nil {
		return nil, fmt.Errorf("list remote sessions: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Session, error) {
		ss, err := s.scanSession(r)
		if err != nil {
			return Session{}, err
		}
		return *ss, nil
	})
	if err != nil {
		return nil, fmt.Errorf("list remote sessions: %w", err)
	}
	return out, nil
}
