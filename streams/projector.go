package streams

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"runtime/debug"
	"slices"
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
	// Prepared is what the handler's Prepare made of the message, if it is
	// a Preparer; nil otherwise, and in messages handed over by other paths
	// (a rebuild), which Apply must handle as well.
	Prepared any
}

// Preparer is a Handler with work that needs no transaction (decoding,
// checking, redacting): the projector calls Prepare for each message as
// it is fetched, on the fetching goroutine, so that work overlaps the
// transaction of the batch before. It is called only for messages Accept
// takes. Prepare sets m.Prepared and nothing else of m, and must not touch
// state that Apply changes; Apply must not change what Prepare made, since
// a batch that fails is applied again with the same messages.
type Preparer interface {
	Prepare(m *Message)
}

// Handler applies a batch of messages inside the projector's transaction.
//
// It returns one entry per message: nil, or a *Rejection that sends the
// message to the dead-letter stream. A non-nil error aborts the whole batch,
// which is rolled back. An error IsTransient covers (the connection, the
// server's availability, or one marked with Transient) is retried without
// end; any other makes the projector apply the batch one message at a time
// and dead-letter the message that keeps failing alone. Return a
// *Rejection for bad input: isolation is the safety net, not the way.
type Handler interface {
	Apply(ctx context.Context, tx pgx.Tx, msgs []Message) ([]error, error)
}

// Committer is a Handler that learns when the transaction of its last
// Apply committed (to count what it applied: an Apply may be rolled back,
// or be an attempt isolation makes). msgs are what that Apply was given.
type Committer interface {
	Committed(last uint64, msgs []Message)
}

// Isolator is a Handler that records something even of a message it
// refuses (desktop tasks move their last sequence, which later publishes
// expect). Isolation never hands the message to Apply, so it calls
// Isolated instead, in the transaction that dead-letters the message.
type Isolator interface {
	Isolated(ctx context.Context, tx pgx.Tx, m Message) error
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
	// applied and the messages of the batch (benchmarks measure latency
	// here), and after a batch passed over without a transaction (see
	// Accept): either way the projector is done with them.
	OnCommit func(last uint64, msgs []Message)
	// OnTimes, if set, is called after each commit with when the batch was
	// begun, handled and committed (benchmarks say where a message's
	// latency goes).
	OnTimes func(BatchTimes)
	// BeforeAck, if set, runs after commit (or a batch passed over) and
	// before ack; an error stops the projector without acking, as a crash
	// there would (tests use it).
	BeforeAck func(last uint64) error
	// Accept, if set, picks the messages the handler sees; the others are
	// passed over (the checkpoint still moves past them; a batch of nothing
	// but those costs no transaction: passOver). A consumer with
	// no filter and an Accept costs the server far less than one with
	// several filter subjects, which nats-server matches against every
	// subject of the stream for each delivery.
	Accept func(subject string) bool
	// NoStandby makes a projector that finds another instance leading end
	// with ErrNotLeader instead of standing by (partition managers decide
	// themselves which partitions an instance contends for).
	NoStandby bool
	// IsolateAfter is how many times a message must fail alone, the same
	// way, before it is dead-lettered; 0 means DefaultIsolateAfter.
	IsolateAfter int
	// StuckAfter is how many failed attempts in a row make Health report
	// the projector stuck; 0 means DefaultStuckAfter.
	StuckAfter int
	// LagInterval is how often spine_projector_lag is measured from the
	// log; 0 means DefaultLagInterval.
	LagInterval time.Duration
	// LockTimeout bounds how long a statement of the projector waits for a
	// lock (PostgreSQL's lock_timeout on its connection), so a lock held
	// elsewhere shows as failed attempts instead of a silent wait; 0 means
	// DefaultLockTimeout, negative no bound.
	LockTimeout time.Duration
}

// Projector defaults.
const (
	DefaultBatchSize = 500
	DefaultMaxWait   = 10 * time.Millisecond
	// DefaultLockTimeout is far beyond any lock a projector's statements
	// wait for in normal work (row locks held for one batch's commit).
	DefaultLockTimeout = 30 * time.Second
)

// Projector turns a stream into PostgreSQL rows, exactly once in effect: a
// batch is applied in one transaction that also advances the checkpoint,
// acked only after commit, and anything at or below the checkpoint is
// skipped when redelivered.
type Projector struct {
	cfg    ProjectorConfig
	log    *slog.Logger
	m      *Metrics
	done   chan struct{}
	stop   context.CancelFunc
	err    error
	mu     sync.Mutex
	last   uint64
	health health
	cons   jetstream.Consumer // the consumer while leading
	// measure asks watchLag to measure the lag now (after a commit); it
	// holds one request, so commits never wait for the log.
	measure chan struct{}

	leading atomic.Bool
	fetchN  int // messages the next fetch asks for (the fetch goroutine's own)
	phases  phaseClock
	// unwritten is the checkpoint passOver left to write (0: none) and
	// written when the checkpoint was last written (the run goroutine's own).
	unwritten uint64
	written   time.Time
}

// Leading reports whether this instance holds the projector's leadership.
func (p *Projector) Leading() bool { return p.leading.Load() }

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
	cfg.IsolateAfter = cmp.Or(cfg.IsolateAfter, DefaultIsolateAfter)
	cfg.StuckAfter = cmp.Or(cfg.StuckAfter, DefaultStuckAfter)
	cfg.LagInterval = cmp.Or(cfg.LagInterval, DefaultLagInterval)
	cfg.LockTimeout = cmp.Or(cfg.LockTimeout, DefaultLockTimeout)
	p := &Projector{cfg: cfg, log: cfg.Logger, m: cfg.Metrics}
	if p.log == nil {
		p.log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if p.m == nil {
		p.m = NewMetrics(nil)
	}
	p.measure = make(chan struct{}, 1)
	p.log = p.log.With("projector", cfg.Name)
	// Export every series from the start, so dashboards see 0, not nothing.
	p.m.lag.WithLabelValues(cfg.Name)
	p.m.checkpoint.WithLabelValues(cfg.Name)
	p.m.retries.WithLabelValues(cfg.Name)
	p.m.applied.WithLabelValues(cfg.Name)
	p.m.skipped.WithLabelValues(cfg.Name)
	p.m.isolated.WithLabelValues(cfg.Name)
	p.m.failures.WithLabelValues(cfg.Name)
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

// consumeAsLeader positions the consumer just after the checkpoint and
// consumes; a delivery lost on the way (errDeliveryLost) positions it there
// again, still leading.
func (p *Projector) consumeAsLeader(ctx context.Context, conn *pgxpool.Conn) error {
	for {
		last, err := p.readCheckpoint(ctx, conn)
		if err != nil {
			p.failedOutside(ctx, "reading the checkpoint", err)
			return err
		}
		if err := p.checkSameLog(ctx, last); err != nil {
			p.failedOutside(ctx, "checking the log", err)
			return err
		}
		cons, err := p.resetConsumer(ctx, last)
		if err != nil {
			p.failedOutside(ctx, "positioning the consumer", err)
			return err
		}
		p.setLast(last)
		p.recoveredOutside()
		err = p.run(ctx, conn, cons)
		if !errors.Is(err, errDeliveryLost) {
			return err
		}
		p.log.Warn("a delivery was lost; positioning the consumer at the checkpoint again", "checkpoint", p.Checkpoint(), "err", err)
	}
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

// run applies batches as they come. The next batch is fetched while the
// current one is applied and committed, so the log and the database work
// at the same time; batches are still applied strictly in order.
func (p *Projector) run(ctx context.Context, conn *pgxpool.Conn, cons jetstream.Consumer) error {
	fetchCtx, cancel := context.WithCancel(ctx)
	batches := make(chan fetchedBatch) // unbuffered: a batch is handed over when the loop is ready for it
	var wg sync.WaitGroup
	p.mu.Lock()
	p.cons = cons
	p.mu.Unlock()
	gone := make(chan error, 1)
	wg.Go(func() { p.fetch(fetchCtx, cons, batches, gone) })
	wg.Go(func() { p.watchLag(fetchCtx) })
	defer func() {
		cancel()
		wg.Wait()
	}()
	p.unwritten, p.written = 0, time.Now()
	for {
		waiting := time.Now()
		var quiet <-chan time.Time
		if p.unwritten != 0 {
			quiet = time.After(p.cfg.MaxWait)
		}
		select {
		case <-quiet:
			if err := p.writeUnwritten(ctx, conn); err != nil {
				return err
			}
		case <-ctx.Done():
			// Stopping: what was passed over is written, so the checkpoint
			// saved is the one Checkpoint reported (a rebuild waits for it).
			if p.unwritten != 0 {
				return p.writeUnwritten(context.WithoutCancel(ctx), conn)
			}
			return nil
		case err := <-gone:
			return fmt.Errorf("consumer %s: %w", p.cfg.Name, err)
		case fb := <-batches:
			p.phases.since(PhaseWait, waiting)
			if err := p.handle(ctx, conn, fb.raw, fb.msgs); err != nil {
				return err
			}
		}
	}
}

// fetch pulls batches into out until ctx ends. A fetch that fails counts
// as a failure (Health); one that finds the consumer gone says so on gone
// and returns, and the projector starts over, which recreates it. So does
// a delivery that never arrived (errDeliveryLost): a message is passed on
// only if it continues the deliveries received so far without a break.
func (p *Projector) fetch(ctx context.Context, cons jetstream.Consumer, out chan<- fetchedBatch, gone chan<- error) {
	p.fetchN = p.cfg.BatchSize
	var received uint64 // the consumer sequence of the last delivery received
	doubt := false      // a fetch failed since: it may have taken deliveries with it
	for ctx.Err() == nil {
		got, fetchErr, broken := p.fetchOnce(ctx, cons, &received, out)
		if broken != nil {
			gone <- broken // nothing after the break applied: redelivered from the checkpoint
			return
		}
		if err := fetchErr; err != nil && ctx.Err() == nil {
			doubt = true
			if got == 0 {
				p.failedOutside(ctx, "fetching", err)
				if consumerGone(err) {
					gone <- err // buffered: run reads it or has returned
					return
				}
				sleep(ctx, time.Second) // no responders answers at once: never spin
				continue
			}
		}
		p.recoveredOutside()
		if got == 0 {
			// The lag is measured by watchLag: an empty fetch says nothing of
			// what is unapplied. After a failure it is asked whether a
			// delivery was lost, since none will come to show the break.
			if doubt && ctx.Err() == nil {
				lost, err := lostDeliveries(ctx, cons, received)
				if lost {
					gone <- fmt.Errorf("%w: the consumer delivered past %d", errDeliveryLost, received)
					return
				}
				doubt = err != nil
			}
			continue
		}
		// Unbroken: nothing was lost before, but the fetch that ended early
		// may have lost what came after it.
		doubt = fetchErr != nil
	}
}

// fetchOnce runs one fetch, handing its messages to out as they arrive:
// whenever the loop is ready for a batch, it gets every message received
// and not yet handed over, so a message waits for the loop, never for the
// fetch to fill or time out (MaxWait). Each message is checked to continue
// the deliveries up to *received, which it advances, and prepared on the
// way. It returns how many messages the fetch brought, why it ended early
// if not for MaxWait (a fetch that waited MaxWait for nothing brought none
// and no error), and the break if one was found.
func (p *Projector) fetchOnce(ctx context.Context, cons jetstream.Consumer, received *uint64, out chan<- fetchedBatch) (int, error, error) {
	batch, err := cons.Fetch(p.fetchN, jetstream.FetchMaxWait(p.cfg.MaxWait))
	if err != nil {
		return 0, err, nil
	}
	prep, _ := p.cfg.Handler.(Preparer)
	var pending fetchedBatch
	got, size := 0, 0
	arriving := batch.Messages()
	for arriving != nil || len(pending.raw) > 0 {
		var ready chan<- fetchedBatch
		if len(pending.raw) > 0 {
			ready = out
		}
		select {
		case m, ok := <-arriving:
			if !ok {
				arriving = nil
				continue
			}
			msg, err := p.message(m, *received)
			if err != nil {
				drain(arriving)
				return got, nil, err
			}
			if prep != nil && (p.cfg.Accept == nil || p.cfg.Accept(msg.Subject)) {
				prepare(prep, &msg.Message) // never for a message the handler will not see
			}
			*received = msg.consumerSeq
			pending.raw, pending.msgs = append(pending.raw, m), append(pending.msgs, msg.Message)
			got, size = got+1, size+len(m.Data())
		case ready <- pending:
			pending = fetchedBatch{}
		case <-ctx.Done():
			drain(arriving)
			return got, nil, nil // received, never applied or acked: redelivered from the checkpoint
		}
	}
	if got > 0 {
		p.fetchN = nextBatchSize(got, size, p.cfg.BatchSize)
	}
	if err := batch.Error(); err != nil && !errors.Is(err, nats.ErrTimeout) {
		return got, err, nil
	}
	return got, nil, nil
}

// drain reads what is left of a fetch left early, until it ends (MaxWait
// at most), so the client's goroutine behind it ends too.
func drain(arriving <-chan jetstream.Msg) {
	if arriving != nil {
		for range arriving {
		}
	}
}

// delivered is a fetched message converted, with its consumer sequence.
type delivered struct {
	Message
	consumerSeq uint64
}

// message converts m, which must be the delivery after the one numbered
// after: the consumer numbers every delivery, and a redelivery too, one
// more than the last, so a message numbered otherwise means one delivery
// went elsewhere (or is a redelivery, which a projector that acks every
// batch it applies never needs): errDeliveryLost.
func (p *Projector) message(m jetstream.Msg, after uint64) (delivered, error) {
	md, err := m.Metadata()
	if err != nil {
		return delivered{}, fmt.Errorf("message metadata: %w", err)
	}
	if md.Sequence.Consumer != after+1 {
		return delivered{}, fmt.Errorf("%w: delivery %d came after %d (stream sequence %d)",
			errDeliveryLost, md.Sequence.Consumer, after, md.Sequence.Stream)
	}
	return delivered{Message: Message{Seq: md.Sequence.Stream, Subject: m.Subject(), Data: m.Data(),
		Header: m.Headers(), Time: md.Timestamp}, consumerSeq: md.Sequence.Consumer}, nil
}

// consumerGone: the durable consumer was deleted (or its stream), which
// only positioning it again (resetConsumer) mends.
func consumerGone(err error) bool {
	return errors.Is(err, jetstream.ErrConsumerDeleted) || errors.Is(err, jetstream.ErrConsumerNotFound) ||
		errors.Is(err, nats.ErrNoResponders)
}

// handle applies one fetched batch (commitBatch: retrying, isolating what
// keeps failing) until it is committed or the projector is stopped, then
// acks.
func (p *Projector) handle(ctx context.Context, conn *pgxpool.Conn, raw []jetstream.Msg, msgs []Message) error {
	err := p.commitBatch(ctx, conn, msgs, func() { _ = raw[len(raw)-1].InProgress() })
	if errors.Is(err, errLostConnection) {
		return err // the lock went with the connection: start over as a candidate
	}
	if err != nil {
		return nil // stopped while retrying: nothing acked, redelivered from the checkpoint
	}
	last := msgs[len(msgs)-1].Seq
	if p.cfg.BeforeAck != nil {
		if err := p.cfg.BeforeAck(last); err != nil {
			return fmt.Errorf("%w: %v", ErrStopped, err)
		}
	}
	// AckAll: acking the last message acks the batch.
	acking := time.Now()
	if err := raw[len(raw)-1].Ack(); err != nil {
		p.log.Warn("ack failed; the checkpoint covers it", "seq", last, "err", err)
	}
	p.phases.since(PhaseAck, acking)
	return nil
}

// prepare runs Prepare, leaving the message unprepared if it panics: Apply
// meets it again under callHandler's recover, which isolates it.
func prepare(prep Preparer, m *Message) {
	defer func() {
		if recover() != nil {
			m.Prepared = nil
		}
	}()
	prep.Prepare(m)
}

// committed records a commit of msgs, up to last, tells OnCommit, and asks for the lag to be measured: a
// message's NumPending, read at delivery, misses what came since.
func (p *Projector) committed(last uint64, msgs []Message) {
	p.setLast(max(last, p.Checkpoint())) // a batch all redelivered ends below it
	if p.cfg.OnCommit != nil {
		p.cfg.OnCommit(last, msgs)
	}
	select {
	case p.measure <- struct{}{}:
	default: // a measurement is already asked for: it will see this commit
	}
}

// IsDataError reports whether err is PostgreSQL refusing the data itself
// (a data exception or an integrity constraint violation, SQLSTATE classes
// 22 and 23). Handlers that can refuse such a message on their own, in a
// savepoint, dead-letter it at once as ReasonUnstorable.
func IsDataError(err error) bool {
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || len(pgErr.Code) < 2 {
		return false
	}
	return pgErr.Code[:2] == "22" || pgErr.Code[:2] == "23"
}

// apply runs one transaction: lock the checkpoint and move it past msgs
// (begin, reading where it was), hand the new messages to the
// handler, dead-letter its rejections, commit.
func (p *Projector) apply(ctx context.Context, conn *pgxpool.Conn, msgs []Message) error {
	if p.passOver(msgs) {
		return nil
	}
	start := time.Now()
	tx, ck, err := p.begin(ctx, conn, msgs[len(msgs)-1].Seq)
	defer tx.Rollback(ctx)
	if err != nil {
		return err
	}
	at := p.phases.since(PhaseBegin, start)
	handled := at
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
		results, err := p.callHandler(ctx, tx, mine)
		if err != nil {
			return err
		}
		at = p.phases.since(PhaseHandle, at)
		handled = at
		if err := p.deadLetter(ctx, tx, mine, results); err != nil {
			return err
		}
	}
	at = p.phases.since(PhaseDeadLetters, at)
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	committed := p.phases.since(PhaseCommit, at)
	p.unwritten, p.written = 0, committed
	if c, ok := p.cfg.Handler.(Committer); ok && len(mine) > 0 {
		c.Committed(mine[len(mine)-1].Seq, mine)
	}
	if p.cfg.OnTimes != nil {
		p.cfg.OnTimes(BatchTimes{Last: fresh[len(fresh)-1].Seq, Messages: len(fresh),
			Began: start, Handled: handled, Committed: committed})
	}
	p.m.applied.WithLabelValues(p.cfg.Name).Add(float64(len(fresh)))
	p.m.batchSize.WithLabelValues(p.cfg.Name).Observe(float64(len(fresh)))
	p.m.batchTime.WithLabelValues(p.cfg.Name).Observe(time.Since(start).Seconds())
	return nil
}

// callHandler runs the handler, turning a panic into an error: a handler
// bug that one message trips is isolated like any error of its own, where
// a crash would meet the same message first at every restart.
func (p *Projector) callHandler(ctx context.Context, tx pgx.Tx, msgs []Message) (results []error, err error) {
	defer func() {
		if r := recover(); r != nil {
			p.log.Error("handler panicked", "panic", secrets.String(fmt.Sprint(r)), "stack", string(debug.Stack()))
			results, err = nil, fmt.Errorf("%w: %v", ErrHandlerPanic, r)
		}
	}()
	return p.cfg.Handler.Apply(ctx, tx, msgs)
}
