package streams

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/spinehq/spine/secrets"
)

// A projector that cannot advance must be visible: Health names it (node's
// /readyz answers 503 with it), spine_projector_consecutive_failures counts
// its failed attempts in a row, and spine_projector_lag is measured from
// the log itself, so it grows while the projector is stuck.

// Health defaults.
const (
	// DefaultStuckAfter is how many failed attempts in a row, with nothing
	// committed or isolated in between, make a projector stuck. The retry
	// backoff doubles from 50 ms to 5 s, so 10 attempts take about 20 s:
	// long enough that a database restart or a deadlock does not flap
	// readiness, short enough that an operator hears of a stuck projector
	// before its lag does.
	DefaultStuckAfter = 10
	// DefaultLagInterval is how often the lag is measured from the log.
	DefaultLagInterval = 5 * time.Second
)

// StuckError says why a projector cannot advance. It holds no error text:
// PostgreSQL's messages can quote the data.
type StuckError struct {
	Projector string
	Attempts  int    // failed attempts in a row
	Seq       uint64 // the stream sequence it is failing at
	Failure   string // what failed: a SQLSTATE and its name, "connection lost", …
	Stopped   error  // why it stopped on its own, when it did
}

func (e *StuckError) Error() string {
	if e.Stopped != nil {
		return fmt.Sprintf("projector %s stopped: %v", e.Projector, e.Stopped)
	}
	return fmt.Sprintf("projector %s cannot advance: %d failed attempts in a row at sequence %d (%s)",
		e.Projector, e.Attempts, e.Seq, e.Failure)
}

// Is makes errors.Is(err, ErrCannotAdvance) true.
func (e *StuckError) Is(target error) bool { return target == ErrCannotAdvance }

// health is the state of the projector's current failure, if any.
type health struct {
	failures int // failed attempts since the last commit or isolation
	seq      uint64
	failure  string
	outside  bool // the last failure was starting to consume or fetching, not applying
}

// Health is nil while the projector advances (or stands by), and a
// *StuckError when it stopped on its own or has failed StuckAfter attempts
// in a row.
func (p *Projector) Health() error {
	if err := p.Err(); err != nil && !errors.Is(err, ErrNotLeader) {
		return &StuckError{Projector: p.cfg.Name, Stopped: err}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.health.failures < p.cfg.StuckAfter {
		return nil
	}
	return &StuckError{Projector: p.cfg.Name, Attempts: p.health.failures, Seq: p.health.seq, Failure: p.health.failure}
}

// failed counts one failed attempt at seq and measures the lag, which no
// commit will update while the projector is failing.
func (p *Projector) failed(ctx context.Context, seq uint64, err error) {
	p.fail(ctx, health{seq: seq, failure: failureKind(err)}, "apply failed; retrying", err)
}

// failedOutside counts a failure to start consuming (reading the
// checkpoint, checking the log, positioning the consumer) or to fetch,
// phase saying which: no apply runs then to count one, and a projector
// that cannot read the log must show in Health as one that cannot write.
func (p *Projector) failedOutside(ctx context.Context, phase string, err error) {
	h := health{seq: p.Checkpoint() + 1, failure: phase, outside: true}
	if _, ok := errors.AsType[*pgconn.PgError](err); ok || isConnectionError(err) {
		h.failure += ": " + failureKind(err)
	}
	p.fail(ctx, h, phase+" failed; retrying", err)
}

func (p *Projector) fail(ctx context.Context, h health, msg string, err error) {
	p.m.retries.WithLabelValues(p.cfg.Name).Inc()
	p.mu.Lock()
	h.failures = p.health.failures + 1
	p.health = h
	p.mu.Unlock()
	p.m.failures.WithLabelValues(p.cfg.Name).Set(float64(h.failures))
	// PostgreSQL's message can quote the data: keys are redacted from it.
	p.log.Warn(msg, "seq", h.seq, "attempt", h.failures, "failure", h.failure,
		"err", secrets.String(err.Error()))
	p.refreshLag(ctx)
}

// recoveredOutside clears a failure failedOutside counted, once that step
// works again: on a quiet stream no commit would.
func (p *Projector) recoveredOutside() {
	p.mu.Lock()
	outside := p.health.outside
	p.mu.Unlock()
	if outside {
		p.advanced()
	}
}

// advanced clears the failure: a message was committed or isolated.
func (p *Projector) advanced() {
	p.mu.Lock()
	was := p.health.failures
	p.health = health{}
	p.mu.Unlock()
	if was > 0 {
		p.m.failures.WithLabelValues(p.cfg.Name).Set(0)
	}
}

// watchLag measures the lag after each commit (one measurement at a time,
// off the commit's path) and every LagInterval until ctx ends, so it is
// right on a quiet stream and on a projector blocked in a transaction.
func (p *Projector) watchLag(ctx context.Context) {
	t := time.NewTicker(p.cfg.LagInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-p.measure:
		}
		p.refreshLag(ctx)
	}
}

// refreshLag sets spine_projector_lag from the log.
func (p *Projector) refreshLag(ctx context.Context) {
	p.mu.Lock()
	cons := p.cons
	p.mu.Unlock()
	if cons == nil || ctx.Err() != nil {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	lag, err := p.measureLag(ctx, cons)
	if err != nil {
		p.log.Debug("measure lag", "err", err)
		return
	}
	p.m.lag.WithLabelValues(p.cfg.Name).Set(float64(lag))
}

// measureLag is what the projector has still to apply: the stream's last
// sequence minus the checkpoint, or, for a consumer with filter subjects
// (which sees only part of the stream), the consumer's pending messages
// plus those delivered and not yet acked (while any of them is past the
// checkpoint).
func (p *Projector) measureLag(ctx context.Context, cons jetstream.Consumer) (uint64, error) {
	if len(p.cfg.Filter) > 0 {
		info, err := cons.Info(ctx)
		if err != nil {
			return 0, err
		}
		// Delivered and not yet acked counts only while something past the
		// checkpoint was delivered: a batch is acked just after its commit,
		// and a measurement in between must not call it lag.
		lag := info.NumPending
		if info.Delivered.Stream > p.Checkpoint() {
			lag += uint64(max(info.NumAckPending, 0))
		}
		return lag, nil
	}
	st, err := p.cfg.JS.Stream(ctx, p.cfg.Stream)
	if err != nil {
		return 0, err
	}
	last, ck := st.CachedInfo().State.LastSeq, p.Checkpoint()
	if last <= ck {
		return 0, nil
	}
	return last - ck, nil
}
