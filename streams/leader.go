package streams

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// lockKey is the advisory lock key of a projector name.
func lockKey(name string) int64 {
	h := fnv.New64a()
	h.Write([]byte("spine.projector." + name))
	return int64(h.Sum64())
}

// acquireLeadership blocks until this instance holds the projector's lock
// on a dedicated connection, or ctx ends.
func (p *Projector) acquireLeadership(ctx context.Context) (*pgxpool.Conn, error) {
	var conn *pgxpool.Conn
	waiting := false
	err := retry(ctx, p.log, func() error {
		c, err := p.cfg.Pool.Acquire(ctx)
		if err != nil {
			return err
		}
		var ok bool
		if err := c.QueryRow(ctx, `SELECT pg_try_advisory_lock($1)`, lockKey(p.cfg.Name)).Scan(&ok); err != nil {
			c.Release()
			return err
		}
		if !ok {
			c.Release()
			if p.cfg.NoStandby {
				return permanentError{ErrNotLeader}
			}
			if !waiting {
				p.log.Info("another instance leads this projector; standing by")
				waiting = true
			}
			return errStandby
		}
		if err := p.boundLockWaits(ctx, c); err != nil {
			c.Release()
			return err
		}
		conn = c
		return nil
	})
	if err != nil {
		return nil, err
	}
	p.log.Debug("leading")
	return conn, nil
}

func (p *Projector) releaseLeadership(conn *pgxpool.Conn) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err := conn.Exec(ctx, `SELECT pg_advisory_unlock($1)`, lockKey(p.cfg.Name))
	if err == nil {
		_, err = conn.Exec(ctx, `RESET lock_timeout`) // the pool's next user gets its default
	}
	if err != nil {
		// The lock dies with the connection: close it rather than pool it.
		_ = conn.Conn().Close(ctx)
	}
	conn.Release()
}

// retry calls f until it succeeds, ctx ends, or f returns a permanent
// error, backing off from 50ms to 5s (1s while standing by).
func retry(ctx context.Context, log *slog.Logger, f func() error) error {
	backoff := 50 * time.Millisecond
	for {
		err := f()
		if err == nil {
			return nil
		}
		var perm permanentError
		if errors.As(err, &perm) {
			return perm.err
		}
		limit := 5 * time.Second
		if errors.Is(err, errStandby) {
			limit = time.Second
		} else {
			log.Warn("retrying after failure", "err", err, "backoff", backoff)
		}
		if !sleep(ctx, backoff) {
			return err
		}
		backoff = min(backoff*2, limit)
	}
}

func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// boundLockWaits sets lock_timeout on the leader's connection: a statement
// waiting on a lock held elsewhere fails (55P03, retried) and so shows in
// Health, where an unbounded wait would show nothing. It also clears any
// statement_timeout the role or database sets: 57014 is retried without
// end (an operator's pg_cancel_backend is not the message's fault), so
// under a statement_timeout a message that is always slow to apply would
// be retried for ever instead of applied.
func (p *Projector) boundLockWaits(ctx context.Context, c *pgxpool.Conn) error {
	ms := "0" // no bound
	if p.cfg.LockTimeout > 0 {
		ms = strconv.FormatInt(max(p.cfg.LockTimeout.Milliseconds(), 1), 10)
	}
	if _, err := c.Exec(ctx, `SELECT set_config('lock_timeout', $1, false), set_config('statement_timeout', '0', false)`, ms); err != nil {
		return fmt.Errorf("set lock_timeout and statement_timeout: %w", err)
	}
	return nil
}

var errStandby = errors.New("standing by")

// permanentError stops retry at once.
type permanentError struct{ err error }

func (p permanentError) Error() string { return p.err.Error() }

var errLostConnection = errors.New("projector connection lost")
