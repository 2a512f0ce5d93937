package streams

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Message is one stored message handed to a Handler.
type Message struct {
	Seq     uint64 // stream sequence
	Subject string
	Data    []byte
	Header  nats.Header
	Time    time.Time // when JetStream stored it
}

// Handler applies a batch of messages inside the projector's transaction.
//
// It returns one entry per message: nil, or a *Rejection that sends the
// message to the dead-letter stream. A non-nil error aborts the whole batch,
// which is rolled back and retried: use it for database failures only, never
// for bad input, or one bad message would block the rest.
type Handler interface {
	Apply(ctx context.Context, tx pgx.Tx, msgs []Message) ([]error, error)
}

// ProjectorConfig configures a Projector.
type ProjectorConfig struct {
	Name    string // durable consumer and checkpoint name; required
	Stream  string // required
	Filter  []string
	Handler Handler // required
	Pool    *pgxpool.Pool
	JS      jetstream.JetStream
	// BatchSize is the most messages applied in one transaction; 0 means 500.
	BatchSize int
	// MaxWait is how long a fetch waits to fill a batch; 0 means 50ms.
	MaxWait time.Duration
	// Redact cleans a dead letter's bytes before they are stored; nil keeps them.
	Redact  func([]byte) []byte
	Logger  *slog.Logger // nil: discard
	Metrics *Metrics     // nil: unregistered metrics
	// OnCommit, if set, is called after each commit with the last sequence
	// applied and the messages of the batch (benchmarks measure latency here).
	OnCommit func(last uint64, msgs []Message)
	// BeforeAck, if set, runs after commit and before ack; an error stops
	// the projector without acking, as a crash there would (tests use it).
	BeforeAck func(last uint64) error
}

// Projector turns a stream into PostgreSQL rows, exactly once in effect: a
// batch is applied in one transaction that also advances the checkpoint,
// acked only after commit, and anything at or below the checkpoint is
// skipped when redelivered.
type Projector struct {
	cfg  ProjectorConfig
	log  *slog.Logger
	m    *Metrics
	done chan struct{}
	stop context.CancelFunc
	err  error
	mu   sync.Mutex
	last uint64
}

// ErrStopped is returned by Wait when the projector was stopped by a test hook.
var ErrStopped = errors.New("projector stopped")

// NewProjector validates cfg and fills its defaults.
func NewProjector(cfg ProjectorConfig) (*Projector, error) {
	if cfg.Name == "" || cfg.Stream == "" || cfg.Handler == nil || cfg.Pool == nil || cfg.JS == nil {
		return nil, errors.New("projector: Name, Stream, Handler, Pool and JS are required")
	}
	if !ValidID(cfg.Name) {
		return nil, fmt.Errorf("projector name %q: %w", cfg.Name, ErrInvalidID)
	}
	cfg.BatchSize = cmp.Or(cfg.BatchSize, 500)
	cfg.MaxWait = cmp.Or(cfg.MaxWait, 50*time.Millisecond)
	p := &Projector{cfg: cfg, log: cfg.Logger, m: cfg.Metrics}
	if p.log == nil {
		p.log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if p.m == nil {
		p.m = NewMetrics(nil)
	}
	p.log = p.log.With("projector", cfg.Name)
	return p, nil
}

// Start positions the durable consumer just after the checkpoint and starts
// projecting in the background. It returns once the consumer is ready.
func (p *Projector) Start(ctx context.Context) error {
	last, err := p.readCheckpoint(ctx)
	if err != nil {
		return err
	}
	cons, err := p.resetConsumer(ctx, last)
	if err != nil {
		return err
	}
	p.setLast(last)
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	p.stop = cancel
	p.done = make(chan struct{})
	go func() {
		defer close(p.done)
		p.err = p.run(runCtx, cons)
	}()
	return nil
}

// Stop lets the batch in flight commit and ack, then stops. Safe to call twice.
func (p *Projector) Stop() {
	if p.stop == nil {
		return
	}
	p.stop()
	<-p.done
}

// Wait blocks until the projector stops and returns why.
func (p *Projector) Wait() error {
	<-p.done
	return p.err
}

// Checkpoint is the last sequence this projector committed.
func (p *Projector) Checkpoint() uint64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.last
}

func (p *Projector) setLast(seq uint64) {
	p.mu.Lock()
	p.last = seq
	p.mu.Unlock()
	p.m.checkpoint.WithLabelValues(p.cfg.Name).Set(float64(seq))
}

func (p *Projector) readCheckpoint(ctx context.Context) (uint64, error) {
	var last int64
	err := retry(ctx, p.log, func() error {
		last = 0
		err := p.cfg.Pool.QueryRow(ctx, `SELECT last_seq FROM projector_checkpoints WHERE name = $1`, p.cfg.Name).Scan(&last)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		return err
	})
	if err != nil {
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

func (p *Projector) run(ctx context.Context, cons jetstream.Consumer) error {
	for ctx.Err() == nil {
		batch, err := cons.Fetch(p.cfg.BatchSize, jetstream.FetchMaxWait(p.cfg.MaxWait))
		if err != nil {
			p.log.Warn("fetch failed", "err", err)
			sleep(ctx, time.Second)
			continue
		}
		var raw []jetstream.Msg
		for m := range batch.Messages() {
			raw = append(raw, m)
		}
		if err := batch.Error(); err != nil && !errors.Is(err, nats.ErrTimeout) && len(raw) == 0 {
			p.log.Debug("fetch ended", "err", err)
		}
		if len(raw) == 0 {
			continue
		}
		if err := p.handle(ctx, raw); err != nil {
			return err
		}
	}
	return nil
}

// handle applies one fetched batch, retrying until it commits or the
// projector is stopped, then acks.
func (p *Projector) handle(ctx context.Context, raw []jetstream.Msg) error {
	msgs := make([]Message, 0, len(raw))
	var pending uint64
	for _, m := range raw {
		md, err := m.Metadata()
		if err != nil {
			return fmt.Errorf("message metadata: %w", err)
		}
		msgs = append(msgs, Message{Seq: md.Sequence.Stream, Subject: m.Subject(), Data: m.Data(),
			Header: m.Headers(), Time: md.Timestamp})
		pending = md.NumPending
	}
	last := msgs[len(msgs)-1].Seq
	err := retry(ctx, p.log, func() error {
		err := p.apply(context.WithoutCancel(ctx), msgs)
		if err != nil {
			p.m.retries.WithLabelValues(p.cfg.Name).Inc()
			keepAlive(raw[len(raw)-1])
		}
		return err
	})
	if err != nil {
		return nil // stopped while retrying: nothing acked, redelivered from the checkpoint
	}
	p.setLast(last)
	p.m.lag.WithLabelValues(p.cfg.Name).Set(float64(pending))
	if p.cfg.OnCommit != nil {
		p.cfg.OnCommit(last, msgs)
	}
	if p.cfg.BeforeAck != nil {
		if err := p.cfg.BeforeAck(last); err != nil {
			return fmt.Errorf("%w: %v", ErrStopped, err)
		}
	}
	// AckAll: acking the last message acks the batch.
	if err := raw[len(raw)-1].Ack(); err != nil {
		p.log.Warn("ack failed; the checkpoint covers it", "seq", last, "err", err)
	}
	return nil
}

func keepAlive(m jetstream.Msg) { _ = m.InProgress() }

// apply runs one transaction: lock and read the checkpoint, hand the new
// messages to the handler, dead-letter its rejections, advance the
// checkpoint, commit.
func (p *Projector) apply(ctx context.Context, msgs []Message) error {
	start := time.Now()
	tx, err := p.cfg.Pool.Begin(ctx)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	defer tx.Rollback(ctx)
	var ck int64
	if _, err := tx.Exec(ctx, `INSERT INTO projector_checkpoints (name, last_seq) VALUES ($1, 0) ON CONFLICT DO NOTHING`, p.cfg.Name); err != nil {
		return fmt.Errorf("checkpoint row: %w", err)
	}
	if err := tx.QueryRow(ctx, `SELECT last_seq FROM projector_checkpoints WHERE name = $1 FOR UPDATE`, p.cfg.Name).Scan(&ck); err != nil {
		return fmt.Errorf("lock checkpoint: %w", err)
	}
	fresh := msgs[:0:0]
	for _, m := range msgs {
		if m.Seq > uint64(ck) {
			fresh = append(fresh, m)
		}
	}
	if skipped := len(msgs) - len(fresh); skipped > 0 {
		p.m.skipped.WithLabelValues(p.cfg.Name).Add(float64(skipped))
	}
	if len(fresh) == 0 {
		return nil
	}
	results, err := p.cfg.Handler.Apply(ctx, tx, fresh)
	if err != nil {
		return err
	}
	if err := p.deadLetter(ctx, tx, fresh, results); err != nil {
		return err
	}
	last := fresh[len(fresh)-1].Seq
	if _, err := tx.Exec(ctx, `UPDATE projector_checkpoints SET last_seq = $2 WHERE name = $1`, p.cfg.Name, int64(last)); err != nil {
		return fmt.Errorf("advance checkpoint: %w", err)
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	p.m.applied.WithLabelValues(p.cfg.Name).Add(float64(len(fresh)))
	p.m.batchSize.WithLabelValues(p.cfg.Name).Observe(float64(len(fresh)))
	p.m.batchTime.WithLabelValues(p.cfg.Name).Observe(time.Since(start).Seconds())
	return nil
}

// deadLetter records each rejected message in the dead_letters table (in
// the batch's transaction) and on the DLQ stream (idempotently, by id,
// before the commit so a crash cannot lose it).
func (p *Projector) deadLetter(ctx context.Context, tx pgx.Tx, msgs []Message, results []error) error {
	if len(results) != len(msgs) {
		return fmt.Errorf("handler returned %d results for %d messages", len(results), len(msgs))
	}
	for i, res := range results {
		if res == nil {
			continue
		}
		rej, ok := AsRejection(res)
		if !ok {
			rej = Reject("handler_error", "%v", res)
		}
		if err := p.deadLetterOne(ctx, tx, msgs[i], rej); err != nil {
			return err
		}
	}
	return nil
}

func (p *Projector) deadLetterOne(ctx context.Context, tx pgx.Tx, m Message, rej *Rejection) error {
	data := m.Data
	if p.cfg.Redact != nil {
		data = p.cfg.Redact(data)
	}
	msg := nats.NewMsg(DLQSubject(p.cfg.Stream, rej.Reason))
	msg.Data = data
	msg.Header.Set(jetstream.MsgIDHeader, "dlq-"+p.cfg.Stream+"-"+strconv.FormatUint(m.Seq, 10))
	msg.Header.Set("Spine-Reason", rej.Reason)
	msg.Header.Set("Spine-Detail", rej.Detail)
	msg.Header.Set("Spine-Stream", p.cfg.Stream)
	msg.Header.Set("Spine-Seq", strconv.FormatUint(m.Seq, 10))
	msg.Header.Set("Spine-Subject", m.Subject)
	if _, err := p.cfg.JS.PublishMsg(ctx, msg); err != nil {
		return fmt.Errorf("publish dead letter %d: %w", m.Seq, err)
	}
	_, err := tx.Exec(ctx, `INSERT INTO dead_letters (stream, seq, subject, reason, detail, data, at)
		VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT DO NOTHING`,
		p.cfg.Stream, int64(m.Seq), m.Subject, rej.Reason, rej.Detail, data, m.Time)
	if err != nil {
		return fmt.Errorf("record dead letter %d: %w", m.Seq, err)
	}
	p.m.deadLetters.WithLabelValues(p.cfg.Name, rej.Reason).Inc()
	p.log.Info("dead letter", "seq", m.Seq, "reason", rej.Reason)
	return nil
}

// retry calls f until it succeeds or ctx ends, backing off from 50ms to 5s.
func retry(ctx context.Context, log *slog.Logger, f func() error) error {
	backoff := 50 * time.Millisecond
	for {
		err := f()
		if err == nil {
			return nil
		}
		log.Warn("retrying after failure", "err", err, "backoff", backoff)
		if !sleep(ctx, backoff) {
			return err
		}
		backoff = min(backoff*2, 5*time.Second)
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
