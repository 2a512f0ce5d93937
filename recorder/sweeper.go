package recorder

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/spinehq/spine/streams"
)

// Sweeper defaults.
const (
	DefaultIdleTimeout = 2 * time.Hour
	DefaultCancelGrace = 60 * time.Second
	// DefaultTelemetryIdle is the default TelemetryIdle: an app's
	// telemetry exports every few seconds while it works.
	DefaultTelemetryIdle = 10 * time.Minute
	MaxSweepInterval     = 15 * time.Second
	minSweepInterval     = 10 * time.Millisecond // tests' tiny timeouts must not spin
	// MaxSweepBatch is the default BatchSize.
	MaxSweepBatch = 1000
)

// Errors a sweeper's end puts on the session row.
const (
	ErrorIdleTimeout = "idle_timeout"         // status timeout: nothing received for the idle timeout
	ErrorCancelGrace = "cancel_grace_expired" // status cancelled: no end within the grace after a cancel
)

// SweeperConfig configures a Sweeper.
type SweeperConfig struct {
	Pool      *pgxpool.Pool      // required
	Publisher *streams.Publisher // required
	// IdleTimeout: a running session whose last envelope JetStream stored
	// this long ago ends timeout; 0 means DefaultIdleTimeout.
	IdleTimeout time.Duration
	// CancelGrace: a running session whose first cancel JetStream stored
	// this long ago ends cancelled; 0 means DefaultCancelGrace.
	CancelGrace time.Duration
	// TelemetryIdle: a running session the apps' telemetry created
	// (origin telemetry) whose last envelope JetStream stored this long ago
	// ends done: its app sends no end without hooks, so quiet is how it
	// ends. 0 means DefaultTelemetryIdle.
	TelemetryIdle time.Duration
	// Interval between sweeps; 0 means a quarter of the shortest of the
	// three, at most MaxSweepInterval.
	Interval time.Duration
	// BatchSize bounds the sessions one sweep reads and ends; the next
	// sweep reads the page after. 0 means MaxSweepBatch.
	BatchSize  int
	Now        func() time.Time      // nil: time.Now
	Logger     *slog.Logger          // nil: discard
	Registerer prometheus.Registerer // nil: metrics not registered
}

// Sweeper ends the sessions nobody will end: one gone quiet for the idle
// timeout (status timeout), a telemetry session gone quiet for the
// telemetry idle time (status done), and one still running a grace period
// after its cancel (status cancelled). It never writes a row: it publishes a
// session.end to the log, which the recorder and accounting project like
// any other (transcript file, router-call row), so a rebuild replays the
// same end. Each sweep runs on one node only, under an advisory lock. The
// row it judges by may lag the log, so the end carries the stored time it
// was judged by, and the recorder applies it only if that time still holds
// (a session heard from since, or already ended, keeps running or keeps
// its end). The end's id is derived from the session and that time, so two
// nodes or a restart that publish it again are stored once (JetStream's
// duplicate window), and dropped by the recorder after that.
type Sweeper struct {
	cfg   SweeperConfig
	log   *slog.Logger
	swept *prometheus.CounterVec
	// acked are the ends this process published (end id -> session id)
	// that were still due when their page was last swept: not sent again
	// while the recorder catches up.
	acked map[string]string
	after string // the last id of the last full page; "" starts over
	stop  context.CancelFunc
	done  chan struct{}
}

// NewSweeper validates cfg and fills its defaults.
func NewSweeper(cfg SweeperConfig) (*Sweeper, error) {
	if cfg.Pool == nil || cfg.Publisher == nil {
		return nil, errors.New("sweeper: Pool and Publisher are required")
	}
	if cfg.IdleTimeout < 0 || cfg.CancelGrace < 0 || cfg.TelemetryIdle < 0 || cfg.Interval < 0 || cfg.BatchSize < 0 {
		return nil, errors.New("sweeper: IdleTimeout, CancelGrace, TelemetryIdle, Interval and BatchSize must not be negative")
	}
	cfg.BatchSize = cmp.Or(cfg.BatchSize, MaxSweepBatch)
	cfg.IdleTimeout = cmp.Or(cfg.IdleTimeout, DefaultIdleTimeout)
	cfg.CancelGrace = cmp.Or(cfg.CancelGrace, DefaultCancelGrace)
	cfg.TelemetryIdle = cmp.Or(cfg.TelemetryIdle, DefaultTelemetryIdle)
	cfg.Interval = cmp.Or(cfg.Interval, max(min(cfg.IdleTimeout, cfg.CancelGrace, cfg.TelemetryIdle, 4*MaxSweepInterval)/4,
		minSweepInterval))
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	w := &Sweeper{cfg: cfg, log: cfg.Logger, acked: map[string]string{},
		swept: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "spine_recorder_swept_total",
			Help: "Session ends the sweeper published, by status (timeout: idle; cancelled: no end within the grace)."},
			[]string{"status"})}
	if w.log == nil {
		w.log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if cfg.Registerer != nil {
		cfg.Registerer.MustRegister(w.swept)
	}
	return w, nil
}

// Start sweeps every Interval in the background until Stop.
func (w *Sweeper) Start(ctx context.Context) error {
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	w.stop, w.done = cancel, make(chan struct{})
	go func() {
		defer close(w.done)
		t := time.NewTicker(w.cfg.Interval)
		defer t.Stop()
		for {
			select {
			case <-runCtx.Done():
				return
			case <-t.C:
				if _, err := w.Sweep(runCtx); err != nil && runCtx.Err() == nil {
					w.log.Warn("sweep failed; retried at the next", "err", err)
				}
			}
		}
	}()
	return nil
}

// Stop ends the background sweeps. Safe to call twice.
func (w *Sweeper) Stop() {
	if w.stop == nil {
		return
	}
	w.stop()
	<-w.done
}

// sweepLockKey is the advisory lock one sweep holds (its transaction's).
var sweepLockKey = func() int64 {
	h := fnv.New64a()
	h.Write([]byte("spine.sweeper"))
	return int64(h.Sum64())
}()

// Sweep runs one pass and returns how many ends it published. A node that
// finds another one sweeping does nothing.
func (w *Sweeper) Sweep(ctx context.Context) (int, error) {
	tx, err := w.cfg.Pool.Begin(ctx)
	if err != nil {
		return 0, fmt.Errorf("sweep: %w", err)
	}
	defer tx.Rollback(ctx)
	var mine bool
	if err := tx.QueryRow(ctx, `SELECT pg_try_advisory_xact_lock($1)`, sweepLockKey).Scan(&mine); err != nil {
		return 0, fmt.Errorf("sweep lock: %w", err)
	}
	if !mine {
		return 0, nil
	}
	now := w.cfg.Now()
	page, err := w.dueSessions(ctx, tx, quiet{before: now.Add(-w.cfg.IdleTimeout),
		telemetryBefore: now.Add(-w.cfg.TelemetryIdle)}, now.Add(-w.cfg.CancelGrace))
	if err != nil {
		return 0, err
	}
	n, still, err := w.publish(ctx, page, now)
	if err != nil {
		return n, err
	}
	w.turnPage(page, still)
	return n, tx.Commit(ctx)
}

// due is a running session the sweeper ends.
type due struct {
	id        string
	cancelled bool      // its cancel's grace is over (else it went quiet)
	telemetry bool      // the apps' telemetry created it: quiet, it is done
	since     time.Time // the stored time it was judged by: its first cancel's, else its last envelope's
}

// quiet is when a session's last envelope must have been stored before for
// it to be quiet: a telemetry session's and any other's.
type quiet struct{ before, telemetryBefore time.Time }

// dueSessions reads one page of the sessions due, those after the last page's
// (sessions whose ends are published and not yet projected must not hold
// back the ones sorting after them), and starts over from the first once a
// page comes back short.
func (w *Sweeper) dueSessions(ctx context.Context, tx pgx.Tx, q quiet, cancelBefore time.Time) ([]due, error) {
	rows, err := tx.Query(ctx, `SELECT id, cancel_requested_at < $2 IS TRUE, origin = 'telemetry',
			CASE WHEN cancel_requested_at < $2 THEN cancel_requested_at ELSE received_at END
		FROM sessions WHERE ended_at IS NULL AND id > $4
		AND (received_at < CASE WHEN origin = 'telemetry' THEN $5::timestamptz ELSE $1::timestamptz END OR cancel_requested_at < $2)
		ORDER BY id LIMIT $3`, q.before, cancelBefore, w.cfg.BatchSize, w.after, q.telemetryBefore)
	if err != nil {
		return nil, fmt.Errorf("sessions due: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (due, error) {
		var d due
		return d, r.Scan(&d.id, &d.cancelled, &d.telemetry, &d.since)
	})
	if err != nil {
		return nil, fmt.Errorf("sessions due: %w", err)
	}
	return out, nil
}

// turnPage moves the cursor past page and forgets the acked ends of
// sessions in its range that are no longer due: projected (ended), or
// dropped by the recorder because the session was heard from since.
func (w *Sweeper) turnPage(page []due, still map[string]bool) {
	from, to := w.after, ""
	if len(page) == w.cfg.BatchSize {
		to = page[len(page)-1].id
	}
	for endID, sessionID := range w.acked {
		if sessionID > from && (to == "" || sessionID <= to) && !still[endID] {
			delete(w.acked, endID)
		}
	}
	w.after = to
}

// publish sends the ends of due sessions, all at once, and waits for the
// log to store them.
func (w *Sweeper) publish(ctx context.Context, due []due, now time.Time) (int, map[string]bool, error) {
	still := make(map[string]bool, len(due))
	futures := map[*streams.Envelope]jetstream.PubAckFuture{}
	for _, d := range due {
		e := sweptEnd(d, now)
		still[e.ID] = true
		if w.acked[e.ID] != "" {
			continue
		}
		f, err := w.cfg.Publisher.PublishAsync(e, nil)
		if err != nil {
			return 0, nil, fmt.Errorf("sweep session %s: %w", d.id, err)
		}
		futures[e] = f
	}
	n := 0
	var failed error
	for e, f := range futures {
		select {
		case ack := <-f.Ok():
			w.acked[e.ID] = e.SessionID
			if !ack.Duplicate {
				n++
				w.swept.WithLabelValues(e.Status).Inc()
				w.log.Info("session ended by the sweeper", "session", e.SessionID, "status", e.Status, "error", e.Error)
			}
		case err := <-f.Err():
			failed = cmp.Or(failed, fmt.Errorf("sweep session %s: %w", e.SessionID, err))
		case <-ctx.Done():
			return n, nil, ctx.Err()
		}
	}
	return n, still, failed
}

// sweptEnd is the end the sweeper publishes for d. It carries the time d
// was judged by, and its id is the same for every end judged on the same
// state (two nodes, a retry), and another once the session was heard from.
func sweptEnd(d due, now time.Time) *streams.Envelope {
	since := d.since.UTC()
	e := &streams.Envelope{V: streams.Version, Type: streams.TypeSessionEnd, At: now.UTC(),
		SessionID: d.id, Status: "timeout", Error: ErrorIdleTimeout, SweptSince: &since}
	switch {
	case d.cancelled:
		e.Status, e.Error = StatusCancelled, ErrorCancelGrace
	case d.telemetry:
		e.Status, e.Error = "done", ""
	}
	e.ID = SweptEndID(d.id, e.Status, since)
	return e
}

// SweptEndID is the id of the end the sweeper publishes for a session it
// judged, by the stored time since, to be due with status.
func SweptEndID(sessionID, status string, since time.Time) string {
	return derivedID("swept-end-", "spine.sweeper", sessionID, status, since.UTC().Format(time.RFC3339Nano))
}
