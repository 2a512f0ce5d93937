package desktop

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/spinehq/spine/auth"
	"github.com/spinehq/spine/streams"
)

// Config is what a Service needs.
type Config struct {
	Pool   *pgxpool.Pool       // required
	JS     jetstream.JetStream // required
	NC     *nats.Conn          // required: work announcements travel on core NATS
	Signer *auth.Signer        // required: runner tokens
	// Now is the service's clock; nil means time.Now. Tests move it to
	// expire leases and deadlines without sleeping.
	Now func() time.Time
	// SweepInterval is how often StartSweeper's loop looks for lost leases
	// and passed deadlines; 0 means one second, negative means no loop
	// (tests call Sweep).
	SweepInterval time.Duration
	// StreamKeepAlive is how often a runner's event stream sends a
	// keepalive, checks its token again and refreshes the runner's
	// presence; 0 means 15 seconds.
	StreamKeepAlive time.Duration
	// BaseURL prefixes links to session pages (cards, fallback text); ""
	// gives paths.
	BaseURL string
	Logger  *slog.Logger // nil: discard
}

// Service is desktop tasks, runners and remote sessions: the write side
// (validate, then publish to SPINE_TASKS) and the reads (the projection).
// Every write waits until the projection has applied it, so a caller reads
// its own writes and a claim's winner can heartbeat at once. The projection
// runs in a projector the caller starts (a node starts it like its other
// projectors): Projection is its handler, Subjects its filter and Committed
// its OnCommit.
type Service struct {
	cfg     Config
	log     *slog.Logger
	now     func() time.Time
	applied *waiter
	hub     *hub
	sub     *nats.Subscription
	stop    context.CancelFunc
	done    chan struct{}
	seenMu  sync.Mutex
	seen    map[string]time.Time // runner id → last seen published (throttle)
}

// New validates cfg and returns a stopped service.
func New(cfg Config) (*Service, error) {
	if cfg.Pool == nil || cfg.JS == nil || cfg.NC == nil || cfg.Signer == nil {
		return nil, errors.New("desktop: Pool, JS, NC and Signer are required")
	}
	cfg.SweepInterval = cmp.Or(cfg.SweepInterval, time.Second)
	cfg.StreamKeepAlive = cmp.Or(cfg.StreamKeepAlive, 15*time.Second)
	s := &Service{cfg: cfg, log: cfg.Logger, now: cfg.Now, seen: map[string]time.Time{}, hub: newHub()}
	if s.log == nil {
		s.log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if s.now == nil {
		s.now = time.Now
	}
	s.applied = newWaiter(cfg.Pool, ProjectorName)
	return s, nil
}

// ProjectorName is the durable consumer and checkpoint of the projection.
const ProjectorName = "tasks"

// Subjects are the SPINE_TASKS subjects the projection reads (its
// consumer's filter): task lifecycles and runner presence.
func Subjects() []string { return []string{subjectTask + ">", subjectRunner + ">"} }

// Committed is the projector's OnCommit: writes waiting for a sequence up to
// last return at once. Without it (another instance runs the projector)
// they learn of commits by polling the checkpoint.
func (s *Service) Committed(last uint64, _ []streams.Message) { s.applied.advance(last) }

// Start starts the announcement subscription; StartSweeper starts the
// sweeper.
func (s *Service) Start(context.Context) error {
	sub, err := s.cfg.NC.Subscribe(subjectAnnounce+">", s.hub.deliver)
	if err != nil {
		return fmt.Errorf("subscribe announcements: %w", err)
	}
	s.sub = sub
	return nil
}

// StartSweeper starts sweeping every SweepInterval (unless it is negative).
// Only a serving instance sweeps: a rebuild must not write transitions into
// the live log. Call it once, after Start.
func (s *Service) StartSweeper() {
	if s.cfg.SweepInterval < 0 || s.stop != nil {
		return
	}
	runCtx, cancel := context.WithCancel(context.Background())
	s.stop, s.done = cancel, make(chan struct{})
	go func() {
		defer close(s.done)
		s.sweepLoop(runCtx)
	}()
}

// SetBaseURL sets the prefix of session links; call it before serving.
func (s *Service) SetBaseURL(u string) { s.cfg.BaseURL = u }

// CloseStreams ends every event stream and page watcher (an HTTP server's
// shutdown hook: those requests never go idle by themselves).
func (s *Service) CloseStreams() { s.hub.close() }

// Stop stops the sweeper and the subscription, and ends every event stream.
func (s *Service) Stop() {
	if s.stop != nil {
		s.stop()
		<-s.done
	}
	if s.sub != nil {
		_ = s.sub.Unsubscribe()
	}
	s.hub.close()
	s.applied.close()
}

// Now is the service's clock.
func (s *Service) Now() time.Time { return s.now() }

// newID returns prefix + 20 random hex digits: a subject-safe id.
func newID(prefix string) string {
	var b [10]byte
	_, _ = rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}

// publishOpts say how a message must land.
type publishOpts struct {
	expect *uint64 // the task's last sequence must still be this (optimistic concurrency)
}

// publish stores m and waits until the projection has applied it. A
// conflict with expect set is ErrConflict.
func (s *Service) publish(ctx context.Context, m *Message, opts publishOpts) (uint64, error) {
	if err := m.prepare(); err != nil {
		return 0, err
	}
	data, err := m.Marshal()
	if err != nil {
		return 0, err
	}
	if len(data) > streams.MaxEnvelopeBytes {
		return 0, fmt.Errorf("%w: the %s message encodes to %d bytes and the log takes at most %d; send less at a time",
			ErrTooLarge, m.Type, len(data), streams.MaxEnvelopeBytes)
	}
	msg := nats.NewMsg(m.Subject())
	msg.Data = data
	msg.Header.Set(jetstream.MsgIDHeader, m.ID)
	var popts []jetstream.PublishOpt
	if opts.expect != nil {
		popts = append(popts, jetstream.WithExpectLastSequenceForSubject(*opts.expect, TaskSubjects(m.TaskID)))
	}
	ack, err := s.cfg.JS.PublishMsg(ctx, msg, popts...)
	if isWrongLastSequence(err) {
		// The task moved on in the log past what the caller read: let the
		// projection catch up with it first, so the caller's next read (and
		// retry) sees the move instead of losing to it again.
		if err := s.caughtUp(ctx, m.TaskID); err != nil {
			return 0, err
		}
		return 0, ErrConflict
	}
	if err != nil {
		return 0, fmt.Errorf("publish %s: %w", m.Type, err)
	}
	if err := s.applied.wait(ctx, ack.Sequence); err != nil {
		return ack.Sequence, err
	}
	return ack.Sequence, nil
}

// caughtUp waits until the projection has applied the task's last
// message in the log.
func (s *Service) caughtUp(ctx context.Context, taskID string) error {
	st, err := s.cfg.JS.Stream(ctx, streams.StreamTasks)
	if err != nil {
		return fmt.Errorf("read the tasks stream: %w", err)
	}
	last, err := st.GetLastMsgForSubject(ctx, TaskSubjects(taskID))
	if err != nil {
		return fmt.Errorf("read task %s's last message: %w", taskID, err)
	}
	return s.applied.wait(ctx, last.Sequence)
}

// prepare stamps m's version and id, replaces U+0000 (which PostgreSQL
// cannot store) with U+FFFD, validates it and removes its secrets: every
// desktop route (runner and member, HTTP and MCP) publishes through here.
func (m *Message) prepare() error {
	m.V = 1
	if m.ID == "" {
		m.ID = newID("m-")
	}
	streams.Scrub(m)
	if err := m.Validate(); err != nil {
		return err
	}
	m.redact()
	return m.Validate() // [REDACTED] can be longer than the secret: what is published must pass the bounds
}

func isWrongLastSequence(err error) bool {
	var apiErr *jetstream.APIError
	if !errors.As(err, &apiErr) {
		return false
	}
	return apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence ||
		apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequenceConstant
}
