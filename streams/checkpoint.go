package streams

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go/jetstream"
)

func (p *Projector) checkSameLog(ctx context.Context, last uint64) error {
	st, err := p.cfg.JS.Stream(ctx, p.cfg.Stream)
	if err != nil {
		return fmt.Errorf("stream %s: %w", p.cfg.Stream, err)
	}
	info, err := st.Info(ctx)
	if err != nil {
		return fmt.Errorf("stream %s: %w", p.cfg.Stream, err)
	}
	if last > info.State.LastSeq {
		return fmt.Errorf("%w: checkpoint %s is at %d but stream %s ends at %d; point SPINE_DATABASE_URL at a fresh database (or the one made from this log), or SPINE_DATA_DIR/SPINE_NATS_URL at the log this database came from",
			ErrForeignLog, p.cfg.Name, last, p.cfg.Stream, info.State.LastSeq)
	}
	return nil
}

// Preflight checks, before Start, that the database's checkpoint belongs to
// this log, so a mismatch is an error at startup rather than a silent skip.
func (p *Projector) Preflight(ctx context.Context) error {
	last, err := p.readCheckpoint(ctx, p.cfg.Pool)
	if err != nil {
		return err
	}
	return p.checkSameLog(ctx, last)
}

// readCheckpoint reads the committed checkpoint (0 before the first batch).
func (p *Projector) readCheckpoint(ctx context.Context, q Querier) (uint64, error) {
	var last int64
	err := q.QueryRow(ctx, `SELECT last_seq FROM projector_checkpoints WHERE name = $1`, p.cfg.Name).Scan(&last)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return 0, fmt.Errorf("read checkpoint %s: %w", p.cfg.Name, err)
	}
	return uint64(last), nil
}

// resetConsumer recreates the durable consumer at checkpoint+1. PostgreSQL's
// checkpoint is the truth; the consumer's own ack state is only a hint, and
// starting from the checkpoint keeps per-session order across restarts
// (a consumer left with unacked messages would deliver newer ones first).
func (p *Projector) resetConsumer(ctx context.Context, last uint64) (jetstream.Consumer, error) {
	err := p.cfg.JS.DeleteConsumer(ctx, p.cfg.Stream, p.cfg.Name)
	if err != nil && !errors.Is(err, jetstream.ErrConsumerNotFound) {
		return nil, fmt.Errorf("reset consumer %s: %w", p.cfg.Name, err)
	}
	cc := jetstream.ConsumerConfig{
		Durable:        p.cfg.Name,
		AckPolicy:      jetstream.AckAllPolicy,
		AckWait:        2 * time.Minute,
		MaxAckPending:  p.cfg.BatchSize * 4,
		FilterSubjects: p.cfg.Filter,
		DeliverPolicy:  jetstream.DeliverAllPolicy,
	}
	if last > 0 {
		cc.DeliverPolicy = jetstream.DeliverByStartSequencePolicy
		cc.OptStartSeq = last + 1
	}
	cons, err := p.cfg.JS.CreateOrUpdateConsumer(ctx, p.cfg.Stream, cc)
	if err != nil {
		return nil, fmt.Errorf("create consumer %s: %w", p.cfg.Name, err)
	}
	return cons, nil
}

// moveCheckpoint locks projector $1's checkpoint row, moves it to $2
// unless it is past it already, and returns where it was.
const moveCheckpoint = `UPDATE projector_checkpoints c SET last_seq = GREATEST(o.last_seq, $2)
	FROM (SELECT last_seq FROM projector_checkpoints WHERE name = $1 FOR UPDATE) o
	WHERE c.name = $1 RETURNING o.last_seq`

// insertCheckpoint makes projector $1's checkpoint row, at 0.
const insertCheckpoint = `INSERT INTO projector_checkpoints (name, last_seq) VALUES ($1, 0) ON CONFLICT DO NOTHING`

// begin begins a transaction on conn and locks and advances the
// checkpoint in it to seq (moveCheckpoint: the row locked, so two instances
// can never apply the same messages at once, and moved unless it is past
// seq already; a batch that fails rolls the move back with the rest), in
// one round trip: BEGIN and the checkpoint's statement are sent together
// (pgx.Batch.BeginTx), where they were two round trips of every batch. It
// returns the transaction, to be rolled back by the caller whatever the
// error, and where the checkpoint was.
func (p *Projector) begin(ctx context.Context, conn *pgxpool.Conn, seq uint64) (pgx.Tx, int64, error) {
	var b pgx.Batch
	b.BeginTx(pgx.TxOptions{})
	var ck int64
	missing := false
	b.Queue(moveCheckpoint, p.cfg.Name, int64(seq)).QueryRow(func(row pgx.Row) error {
		err := row.Scan(&ck)
		if errors.Is(err, pgx.ErrNoRows) {
			missing = true // no row yet: makeAndAdvance makes it
			return nil
		}
		return err
	})
	br := conn.SendBatch(ctx, &b)
	tx := br.Tx()
	if err := br.Close(); err != nil {
		return tx, 0, fmt.Errorf("begin and lock the checkpoint: %w", err)
	}
	if missing { // the projector's first batch
		var err error
		if ck, err = p.makeAndAdvance(ctx, tx, seq); err != nil {
			return tx, 0, err
		}
	}
	return tx, ck, nil
}

// makeAndAdvance makes the checkpoint row that moveCheckpoint found
// missing, then locks and moves it as begin does.
func (p *Projector) makeAndAdvance(ctx context.Context, tx pgx.Tx, seq uint64) (int64, error) {
	if _, err := tx.Exec(ctx, insertCheckpoint, p.cfg.Name); err != nil {
		return 0, fmt.Errorf("checkpoint row: %w", err)
	}
	var ck int64
	if err := tx.QueryRow(ctx, moveCheckpoint, p.cfg.Name, int64(seq)).Scan(&ck); err != nil {
		return 0, fmt.Errorf("lock and advance checkpoint: %w", err)
	}
	return ck, nil
}

// passOver reports whether msgs hold nothing for the handler (Accept
// takes none of them past the checkpoint), and if so notes their last
// sequence as the checkpoint still to write: such a batch needs no
// transaction. The checkpoint is written with the next batch that does, at
// the first quiet moment (writeUnwritten), and at least every
// checkpointEvery, so a projector that takes few of a stream's messages
// (accounting takes no chunks) costs PostgreSQL a commit a second, not one
// a batch. Until then a restart delivers the passed-over messages again,
// to be passed over again.
func (p *Projector) passOver(msgs []Message) bool {
	if p.cfg.Accept == nil || time.Since(p.written) >= checkpointEvery {
		return false
	}
	last := p.Checkpoint()
	fresh := 0
	for _, m := range msgs {
		if m.Seq <= last {
			continue
		}
		if p.cfg.Accept(m.Subject) {
			return false
		}
		fresh++
	}
	p.unwritten = max(p.unwritten, msgs[len(msgs)-1].Seq)
	p.m.applied.WithLabelValues(p.cfg.Name).Add(float64(fresh)) // as a committed batch counts them
	return true
}

// checkpointEvery bounds how long passOver leaves the checkpoint unwritten
// while batches keep coming.
var checkpointEvery = time.Second

// writeUnwritten writes the checkpoint passOver left, in a transaction of
// its own. Its failure ends the loop like a batch's lost connection: the
// projector starts over from the checkpoint written, and what was passed
// over since is delivered again, to be passed over again.
func (p *Projector) writeUnwritten(ctx context.Context, conn *pgxpool.Conn) error {
	seq := p.unwritten
	tx, _, err := p.begin(ctx, conn, seq)
	if err == nil {
		err = tx.Commit(ctx)
	}
	_ = tx.Rollback(ctx) // after a commit, a no-op
	if err != nil {
		p.failedOutside(ctx, "writing the checkpoint of passed-over messages", err)
		return fmt.Errorf("checkpoint %s of passed-over messages: %w", p.cfg.Name, err)
	}
	p.unwritten, p.written = 0, time.Now()
	return nil
}
