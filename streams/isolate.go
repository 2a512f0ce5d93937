package streams

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Isolation: a batch that fails with an error IsTransient does not cover
// may hold a message that can never be applied (a value over an index's
// size, a handler that refuses it). The projector then applies the batch
// one message per transaction; a message that fails alone IsolateAfter
// times in a row, the same way each time (failureKind), is dead-lettered
// with the database's message in a transaction that also advances the
// checkpoint, and the rest of the batch goes on as one batch again. A
// transient failure on the way sends the projector back to retrying the
// batch from where it is, with backoff, without end.

// DefaultIsolateAfter is how many times a message must fail alone, the same
// way, before it is dead-lettered. The batch's failure only says some
// message in it is refused; the first failure alone names it; two more, in
// fresh transactions 200 ms and 400 ms later, show the refusal is the
// message's and not a passing state that IsTransient does not know. A
// deterministic refusal costs 0.6 s to isolate; dead-lettering a good
// message would cost its projection.
const DefaultIsolateAfter = 3

const isolateBackoff = 200 * time.Millisecond

// commitBatch applies msgs until every one is committed or dead-lettered.
// It returns nil when done, errLostConnection when the leader's connection
// went, or the context's error when the projector was stopped meanwhile.
func (p *Projector) commitBatch(ctx context.Context, conn *pgxpool.Conn, msgs []Message, keep func()) error {
	bg := context.WithoutCancel(ctx)
	backoff := 50 * time.Millisecond
	for len(msgs) > 0 {
		err := p.apply(bg, conn, msgs)
		if err == nil {
			p.advanced()
			p.committed(msgs[len(msgs)-1].Seq, msgs) // only these: applyAlone reported those before
			return nil
		}
		p.failed(ctx, msgs[0].Seq, err)
		if !IsTransient(err) && !conn.Conn().IsClosed() {
			if msgs, err = p.isolate(ctx, conn, msgs, keep); err == nil {
				continue // isolated one, or applied them all alone: the rest as one batch
			}
		}
		keep()
		if conn.Conn().IsClosed() {
			return errLostConnection
		}
		if !sleep(ctx, backoff) {
			return ctx.Err()
		}
		backoff = min(backoff*2, 5*time.Second)
	}
	return nil
}

// isolate applies msgs one per transaction until one is isolated, and
// returns the messages after it. An error (transient, or the projector
// stopping) returns the messages from the one that failed.
func (p *Projector) isolate(ctx context.Context, conn *pgxpool.Conn, msgs []Message, keep func()) ([]Message, error) {
	for i, m := range msgs {
		isolated, err := p.applyAlone(ctx, conn, m, keep)
		if err != nil {
			return msgs[i:], err
		}
		if isolated {
			return msgs[i+1:], nil
		}
	}
	return nil, nil
}

// applyAlone applies one message in its own transaction, retrying it while
// it fails in a way IsTransient does not cover, and dead-letters it once it
// has failed IsolateAfter times the same way. It reports whether it did.
func (p *Projector) applyAlone(ctx context.Context, conn *pgxpool.Conn, m Message, keep func()) (bool, error) {
	bg := context.WithoutCancel(ctx)
	wait, same, last := isolateBackoff, 0, ""
	for {
		err := p.apply(bg, conn, []Message{m})
		if err == nil {
			p.advanced()
			p.committed(m.Seq, []Message{m})
			return false, nil
		}
		p.failed(ctx, m.Seq, err)
		if IsTransient(err) || conn.Conn().IsClosed() {
			return false, err
		}
		if kind := failureKind(err); kind == last {
			same++
		} else {
			same, last = 1, kind
		}
		if same >= p.cfg.IsolateAfter {
			if err := p.isolateOne(bg, conn, m, err); err != nil {
				p.failed(ctx, m.Seq, err)
				return false, err
			}
			return true, nil
		}
		keep()
		if !sleep(ctx, wait) {
			return false, ctx.Err()
		}
		wait *= 2
	}
}

// isolateOne dead-letters a message that keeps failing, in its own
// transaction with the checkpoint. When that fails too, not transiently
// (the DLQ refuses the copy, the row's data is refused), the message would
// block the stream for ever: it is dead-lettered without its data instead.
func (p *Projector) isolateOne(ctx context.Context, conn *pgxpool.Conn, m Message, cause error) error {
	rej := isolationRejection(cause, p.cfg.IsolateAfter)
	p.log.Warn("message keeps failing; isolated and dead-lettered", "seq", m.Seq, "reason", rej.Reason,
		"failure", failureKind(cause))
	err := p.isolateTx(ctx, conn, m, func(tx pgx.Tx) error { return p.deadLetterOne(ctx, tx, m, rej) })
	if err == nil || IsTransient(err) || conn.Conn().IsClosed() {
		return err
	}
	p.log.Warn("dead letter refused; recording it without the message", "seq", m.Seq, "failure", failureKind(err))
	bare := &Rejection{Reason: rej.Reason, Owner: rej.Owner,
		Detail: rej.Detail + "; the message itself could not be kept: " + err.Error()}
	return p.isolateTx(ctx, conn, m, func(tx pgx.Tx) error { return p.deadLetterBare(ctx, tx, m, bare) })
}

// isolateTx runs write and advances the checkpoint past m in one transaction.
func (p *Projector) isolateTx(ctx context.Context, conn *pgxpool.Conn, m Message, write func(pgx.Tx) error) error {
	tx, ck, err := p.begin(ctx, conn, m.Seq)
	defer tx.Rollback(ctx)
	if err != nil {
		return err
	}
	if m.Seq <= uint64(ck) {
		return nil // already past it: the move was none, and is rolled back
	}
	if err := write(tx); err != nil {
		return err
	}
	if err := p.tellIsolator(ctx, tx, m); err != nil {
		return err
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	p.m.isolated.WithLabelValues(p.cfg.Name).Inc()
	p.m.applied.WithLabelValues(p.cfg.Name).Inc()
	p.advanced()
	p.committed(m.Seq, []Message{m})
	return nil
}

// tellIsolator hands an isolated message the handler accepts to its
// Isolated, if it has one.
func (p *Projector) tellIsolator(ctx context.Context, tx pgx.Tx, m Message) error {
	iso, ok := p.cfg.Handler.(Isolator)
	if !ok || (p.cfg.Accept != nil && !p.cfg.Accept(m.Subject)) {
		return nil
	}
	if err := iso.Isolated(ctx, tx, m); err != nil {
		return fmt.Errorf("handler's record of isolated message %d: %w", m.Seq, err)
	}
	return nil
}

// isolationRejection is the dead letter of a message that failed alone
// attempts times: the database's SQLSTATE and message, or the handler's.
func isolationRejection(cause error, attempts int) *Rejection {
	if pgErr, ok := errors.AsType[*pgconn.PgError](cause); ok {
		return Reject(ReasonUnstorable, "PostgreSQL refused its rows %d times: SQLSTATE %s: %s",
			attempts, pgErr.Code, pgErr.Message)
	}
	return Reject(ReasonHandlerError, "the handler failed on it %d times: %v", attempts, cause)
}
