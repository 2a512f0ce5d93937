package recorder

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/spinehq/spine/spine"
)

// pipeTx is a batch's transaction with its writes pipelined: a write that
// needs no answer is queued (queued) and sent with the others in one round
// trip, when the batch is flushed (send) or as soon as anything else goes
// to PostgreSQL through the transaction, whichever comes first. So
// statements still run in the order the recorder made them: a read sees
// every write queued before it, and a savepoint (Begin) never holds a
// write queued before it, which its rollback would otherwise take along.
// A steady batch of chunks and commands was about a dozen round trips (a
// COPY is two, and each write waited for its answer); it is now four:
// the projector's BEGIN with its checkpoint, the sessions read, the
// writes, and COMMIT (docs/performance.md#ingest).
type pipeTx struct {
	pgx.Tx
	queued pgx.Batch
}

var _ pgx.Tx = (*pipeTx)(nil)

// queue queues a write; what names it in the error of its failure. Never
// while a savepoint begun with Begin is open: the savepoint is the bare
// transaction's, and a write queued meanwhile would be sent after it ended.
// Conn and LargeObjects are the bare transaction's too, and bypass the
// queue: the recorder uses neither.
func (t *pipeTx) queue(what, sql string, args ...any) {
	spine.QueueWrite(&t.queued, what, sql, args...)
}

// send sends the queued writes and waits for their answers: the first
// failure, if any, is the error.
func (t *pipeTx) send(ctx context.Context) error {
	if t.queued.Len() == 0 {
		return nil
	}
	q := t.queued
	t.queued = pgx.Batch{}
	if err := t.Tx.SendBatch(ctx, &q).Close(); err != nil {
		return fmt.Errorf("queued writes: %w", err)
	}
	return nil
}

func (t *pipeTx) Begin(ctx context.Context) (pgx.Tx, error) {
	if err := t.send(ctx); err != nil {
		return nil, err
	}
	return t.Tx.Begin(ctx)
}

func (t *pipeTx) Commit(ctx context.Context) error {
	if err := t.send(ctx); err != nil {
		return err
	}
	return t.Tx.Commit(ctx)
}

func (t *pipeTx) Rollback(ctx context.Context) error {
	t.queued = pgx.Batch{}
	return t.Tx.Rollback(ctx)
}

func (t *pipeTx) CopyFrom(ctx context.Context, table pgx.Identifier, columns []string, rows pgx.CopyFromSource) (int64, error) {
	if err := t.send(ctx); err != nil {
		return 0, err
	}
	return t.Tx.CopyFrom(ctx, table, columns, rows)
}

func (t *pipeTx) SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults {
	if err := t.send(ctx); err != nil {
		return failedBatch{err}
	}
	return t.Tx.SendBatch(ctx, b)
}

func (t *pipeTx) Prepare(ctx context.Context, name, sql string) (*pgconn.StatementDescription, error) {
	if err := t.send(ctx); err != nil {
		return nil, err
	}
	return t.Tx.Prepare(ctx, name, sql)
}

func (t *pipeTx) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	if err := t.send(ctx); err != nil {
		return pgconn.CommandTag{}, err
	}
	return t.Tx.Exec(ctx, sql, args...)
}

func (t *pipeTx) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	if err := t.send(ctx); err != nil {
		return nil, err // as pgx's own: a caller checks err before rows
	}
	return t.Tx.Query(ctx, sql, args...)
}

func (t *pipeTx) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	if err := t.send(ctx); err != nil {
		return failedRow{err}
	}
	return t.Tx.QueryRow(ctx, sql, args...)
}

// failedRow and failedBatch answer a read that was never sent because the
// writes queued before it failed.
type failedRow struct{ err error }

func (r failedRow) Scan(...any) error { return r.err }

type failedBatch struct{ err error }

func (b failedBatch) Exec() (pgconn.CommandTag, error) { return pgconn.CommandTag{}, b.err }
func (b failedBatch) Query() (pgx.Rows, error)         { return nil, b.err }
func (b failedBatch) QueryRow() pgx.Row                { return failedRow(b) }
func (b failedBatch) Close() error                     { return b.err }
func (b failedBatch) Tx() pgx.Tx                       { return nil }
