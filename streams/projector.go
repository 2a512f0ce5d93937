package streams

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/spinehq/spine/secrets"
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
	// BatchSize is the most messages applied in one transaction; 0 means
	// DefaultBatchSize.
	BatchSize int
	// MaxWait is how long a fetch waits to fill a batch; 0 means
	// DefaultMaxWait. It bounds the latency a quiet stream adds.
	MaxWait time.Duration
	// Redact cleans a dead letter's bytes before they are stored and
	// published; nil uses secrets.Bytes. The detail is always redacted.
	Redact  func([]byte) []byte
	Logger  *slog.Logger // nil: discard
	Metrics *Metrics     // nil: unregistered metrics
	// OnCommit, if set, is called after each commit with the last sequence
	// applied and the messages of the batch (benchmarks measure latency here).
	OnCommit func(last uint64, msgs []Message)
	// BeforeAck, if set, runs after commit and before ack; an error stops
	// the projector without acking, as a crash there would (tests use it).
	BeforeAck func(last uint64) error
	// Accept, if set, picks the messages the handler sees; the others are
	// passed over (the checkpoint still moves past them). A consumer with
	// no filter and an Accept costs the server far less than one with
	// several filter subjects, which nats-server matches against every
	// subject of the stream for each delivery.
	Accept func(subject string) bool
	// NoStandby makes a projector that finds another instance leading end
	// with ErrNotLeader instead of standing by (partition managers decide
	// themselves which partitions an instance contends for).
	NoStandby bool
}

// Projector defaults.
const (
	DefaultBatchSize = 500
	DefaultMaxWait   = 10 * time.Millisecond
)

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

	leading atomic.Bool
}

// Leading reports whether this instance holds the projector's leadership.
func (p *Projector) Leading() bool { return p.leading.Load() }

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
	cfg.BatchSize = cmp.Or(cfg.BatchSize, DefaultBatchSize)
	cfg.MaxWait = cmp.Or(cfg.MaxWait, DefaultMaxWait)
	p := &Projector{cfg: cfg, log: cfg.Logger, m: cfg.Metrics}
	if p.log == nil {
		p.log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if p.m == nil {
		p.m = NewMetrics(nil)
	}
	p.log = p.log.With("projector", cfg.Name)
	// Export every series from the start, so dashboards see 0, not nothing.
	p.m.lag.WithLabelValues(cfg.Name)
	p.m.checkpoint.WithLabelValues(cfg.Name)
	p.m.retries.WithLabelValues(cfg.Name)
	p.m.applied.WithLabelValues(cfg.Name)
	p.m.skipped.WithLabelValues(cfg.Name)
	return p, nil
}

// Start checks the stream and starts projecting in the background. A
// projector consumes only while it holds its leadership lock (a PostgreSQL
// advisory lock on its name, held on the connection its transactions run
// on): a second instance with the same name waits as a standby and takes
// over when the first one's connection goes.
func (p *Projector) Start(ctx context.Context) error {
	if _, err := p.cfg.JS.Stream(ctx, p.cfg.Stream); err != nil {
		return fmt.Errorf("projector %s: stream %s: %w", p.cfg.Name, p.cfg.Stream, err)
	}
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	p.stop = cancel
	p.done = make(chan struct{})
	go func() {
		defer close(p.done)
		p.err = p.lead(runCtx)
	}()
	return nil
}

// lead takes the leadership lock, positions the consumer just after the
// checkpoint and consumes until the projector stops or its connection is
// lost, then starts over.
func (p *Projector) lead(ctx context.Context) error {
	for ctx.Err() == nil {
		conn, err := p.acquireLeadership(ctx)
		if errors.Is(err, ErrNotLeader) {
			return err
		}
		if err != nil {
			return nil // stopped while waiting
		}
		p.leading.Store(true)
		err = p.consumeAsLeader(ctx, conn)
		p.releaseLeadership(conn)
		p.leading.Store(false)
		if errors.Is(err, ErrStopped) {
			return err
		}
		if errors.Is(err, ErrForeignLog) {
			p.log.Error("projector stopped", "err", err)
			return err
		}
		if err != nil {
			p.log.Warn("leadership lost; starting over", "err", err)
			sleep(ctx, time.Second) // a missing stream or table must not spin
		}
	}
	return nil
}

func (p *Projector) consumeAsLeader(ctx context.Context, conn *pgxpool.Conn) error {
	last, err := p.readCheckpoint(ctx, conn)
	if err != nil {
		return err
	}
	if err := p.checkSameLog(ctx, last); err != nil {
		return err
	}
	cons, err := p.resetConsumer(ctx, last)
	if err != nil {
		return err
	}
	p.setLast(last)
	return p.run(ctx, conn, cons)
}

// ErrForeignLog: the database's checkpoint is past the end of the stream,
// so its projections were made from another log (another data directory
// or NATS). Projecting would silently skip everything up to the checkpoint.
var ErrForeignLog = errors.New("database was projected from another log")

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

// Err is why the projector stopped on its own (nil while it runs).
func (p *Projector) Err() error {
	select {
	case <-p.done:
		return p.err
	default:
		return nil
	}
}

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
		conn = c
		return nil
	})
	if err != nil {
		return nil, err
	}
	p.log.Debug("leading")
	return conn, nil
}

var errStandby = errors.New("standing by")

// ErrNotLeader ends a NoStandby projector that found another instance leading.
var ErrNotLeader = errors.New("another instance leads this projector")

func (p *Projector) releaseLeadership(conn *pgxpool.Conn) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_unlock($1)`, lockKey(p.cfg.Name)); err != nil {
		// The lock dies with the connection: close it rather than pool it.
		_ = conn.Conn().Close(ctx)
	}
	conn.Release()
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

// Name is the projector's durable consumer and checkpoint name.
func (p *Projector) Name() string { return p.cfg.Name }

// Stream is the stream the projector consumes.
func (p *Projector) Stream() string { return p.cfg.Stream }

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

// readCheckpoint reads the committed checkpoint (0 before the first batch).
func (p *Projector) readCheckpoint(ctx context.Context, q interface {
	QueryRow(context.Context, string, ...any) pgx.Row
}) (uint64, error) {
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

// run applies batches as they come. The next batch is fetched while the
// current one is applied and committed, so the log and the database work
// at the same time; batches are still applied strictly in order.
func (p *Projector) run(ctx context.Context, conn *pgxpool.Conn, cons jetstream.Consumer) error {
	fetchCtx, cancel := context.WithCancel(ctx)
	batches := make(chan []jetstream.Msg, 1)
	var wg sync.WaitGroup
	wg.Go(func() { p.fetch(fetchCtx, cons, batches) })
	defer func() {
		cancel()
		wg.Wait()
	}()
	for {
		select {
		case <-ctx.Done():
			return nil
		case raw := <-batches:
			if err := p.handle(ctx, conn, raw); err != nil {
				return err
			}
		}
	}
}

// fetch pulls batches into out until ctx ends.
func (p *Projector) fetch(ctx context.Context, cons jetstream.Consumer, out chan<- []jetstream.Msg) {
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
			p.m.lag.WithLabelValues(p.cfg.Name).Set(0) // nothing pending
			continue
		}
		select {
		case out <- raw:
		case <-ctx.Done():
			return // fetched, never applied or acked: redelivered from the checkpoint
		}
	}
}

// handle applies one fetched batch, retrying until it commits or the
// projector is stopped, then acks.
func (p *Projector) handle(ctx context.Context, conn *pgxpool.Conn, raw []jetstream.Msg) error {
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
		err := p.apply(context.WithoutCancel(ctx), conn, msgs)
		if IsDataError(err) {
			// Some message makes a row PostgreSQL will never accept: find it
			// rather than retry the batch forever.
			err = p.applyOneByOne(context.WithoutCancel(ctx), conn, msgs)
		}
		if err != nil {
			p.m.retries.WithLabelValues(p.cfg.Name).Inc()
			keepAlive(raw[len(raw)-1])
			if conn.Conn().IsClosed() {
				return permanentError{errLostConnection}
			}
		}
		return err
	})
	if errors.Is(err, errLostConnection) {
		return err // the lock went with the connection: start over as a candidate
	}
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

// ReasonUnstorable is the dead-letter reason of a message whose rows
// PostgreSQL refuses with a data or constraint error (SQLSTATE classes 22
// and 23): retrying would fail the same way forever.
const ReasonUnstorable = "unstorable"

// IsDataError reports whether err is PostgreSQL refusing the data itself
// (a data exception or an integrity constraint violation), as opposed to a
// failure that a retry can cure.
func IsDataError(err error) bool {
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || len(pgErr.Code) < 2 {
		return false
	}
	return pgErr.Code[:2] == "22" || pgErr.Code[:2] == "23"
}

// applyOneByOne applies a batch one message per transaction, so the
// message PostgreSQL refuses is found and dead-lettered on its own while the
// others are applied. Each transaction advances the checkpoint, so a crash
// part way through loses and doubles nothing.
func (p *Projector) applyOneByOne(ctx context.Context, conn *pgxpool.Conn, msgs []Message) error {
	for _, m := range msgs {
		err := p.apply(ctx, conn, []Message{m})
		if IsDataError(err) {
			err = p.poison(ctx, conn, m, err)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// poison dead-letters one message that cannot be stored, in its own
// transaction with the checkpoint.
func (p *Projector) poison(ctx context.Context, conn *pgxpool.Conn, m Message, cause error) error {
	var pgErr *pgconn.PgError
	errors.As(cause, &pgErr)
	rej := Reject(ReasonUnstorable, "PostgreSQL refused its rows: SQLSTATE %s: %s", pgErr.Code, pgErr.Message)
	p.log.Warn("message cannot be stored; dead-lettered", "seq", m.Seq, "sqlstate", pgErr.Code)
	tx, err := conn.Begin(ctx)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	defer tx.Rollback(ctx)
	ck, err := p.lockCheckpoint(ctx, tx)
	if err != nil {
		return err
	}
	if m.Seq <= uint64(ck) {
		return nil
	}
	if err := p.deadLetterOne(ctx, tx, m, rej); err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, `UPDATE projector_checkpoints SET last_seq = $2 WHERE name = $1`, p.cfg.Name, int64(m.Seq)); err != nil {
		return fmt.Errorf("advance checkpoint: %w", err)
	}
	return tx.Commit(ctx)
}

// apply runs one transaction: lock and read the checkpoint, hand the new
// messages to the handler, dead-letter its rejections, advance the
// checkpoint, commit.
func (p *Projector) apply(ctx context.Context, conn *pgxpool.Conn, msgs []Message) error {
	start := time.Now()
	tx, err := conn.Begin(ctx)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	defer tx.Rollback(ctx)
	ck, err := p.lockCheckpoint(ctx, tx)
	if err != nil {
		return err
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
	mine := fresh
	if p.cfg.Accept != nil {
		mine = slices.DeleteFunc(slices.Clone(fresh), func(m Message) bool { return !p.cfg.Accept(m.Subject) })
	}
	if len(mine) > 0 {
		results, err := p.cfg.Handler.Apply(ctx, tx, mine)
		if err != nil {
			return err
		}
		if err := p.deadLetter(ctx, tx, mine, results); err != nil {
			return err
		}
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
		} else if !ValidID(rej.Reason) {
			// The reason becomes a DLQ subject token: one that cannot be
			// published would block the stream behind this message forever.
			rej = Reject("handler_error", "reason %q: %s", rej.Reason, rej.Detail)
		}
		if err := p.deadLetterOne(ctx, tx, msgs[i], rej); err != nil {
			return err
		}
	}
	return nil
}

func (p *Projector) deadLetterOne(ctx context.Context, tx pgx.Tx, m Message, rej *Rejection) error {
	redact := p.cfg.Redact
	if redact == nil {
		redact = secrets.Bytes
	}
	data := redact(m.Data)
	rej = &Rejection{Reason: rej.Reason, Detail: secrets.String(rej.Detail), Owner: rej.Owner}
	msg := nats.NewMsg(DLQSubject(p.cfg.Stream, rej.Reason))
	msg.Data = data
	msg.Header.Set(jetstream.MsgIDHeader, "dlq-"+p.cfg.Stream+"-"+strconv.FormatUint(m.Seq, 10))
	msg.Header.Set("Spine-Reason", rej.Reason)
	msg.Header.Set("Spine-Detail", headerSafe(rej.Detail))
	msg.Header.Set("Spine-Stream", p.cfg.Stream)
	msg.Header.Set("Spine-Seq", strconv.FormatUint(m.Seq, 10))
	msg.Header.Set("Spine-Subject", m.Subject)
	if _, err := p.cfg.JS.PublishMsg(ctx, msg); err != nil {
		return fmt.Errorf("publish dead letter %d: %w", m.Seq, err)
	}
	who := DeadLetterOwner(m, rej)
	_, err := tx.Exec(ctx, `INSERT INTO dead_letters (stream, seq, subject, reason, detail, data, at, org, member)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) ON CONFLICT DO NOTHING`,
		p.cfg.Stream, int64(m.Seq), m.Subject, rej.Reason, strings.ReplaceAll(rej.Detail, "\x00", "\uFFFD"), data, m.Time,
		who.Org, who.Member)
	if err != nil {
		return fmt.Errorf("record dead letter %d: %w", m.Seq, err)
	}
	p.m.deadLetters.WithLabelValues(p.cfg.Name, rej.Reason).Inc()
	p.log.Info("dead letter", "seq", m.Seq, "reason", rej.Reason)
	return nil
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

// permanentError stops retry at once.
type permanentError struct{ err error }

func (p permanentError) Error() string { return p.err.Error() }

var errLostConnection = errors.New("projector connection lost")

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

// headerSafe makes a value fit a NATS header: one line, bounded.
func headerSafe(s string) string {
	s = strings.Map(func(r rune) rune {
		if r == '\r' || r == '\n' || r == 0 {
			return ' '
		}
		return r
	}, s)
	if len(s) > 1024 {
		s = s[:1024]
	}
	return s
}

// lockCheckpoint reads the checkpoint inside tx, locking its row so two
// instances can never apply the same messages at once.
func (p *Projector) lockCheckpoint(ctx context.Context, tx pgx.Tx) (int64, error) {
	var ck int64
	if _, err := tx.Exec(ctx, `INSERT INTO projector_checkpoints (name, last_seq) VALUES ($1, 0) ON CONFLICT DO NOTHING`, p.cfg.Name); err != nil {
		return 0, fmt.Errorf("checkpoint row: %w", err)
	}
	if err := tx.QueryRow(ctx, `SELECT last_seq FROM projector_checkpoints WHERE name = $1 FOR UPDATE`, p.cfg.Name).Scan(&ck); err != nil {
		return 0, fmt.Errorf("lock checkpoint: %w", err)
	}
	return ck, nil
}
