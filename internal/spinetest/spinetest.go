// Package spinetest is the harness for spine's integration tests: an
// in-process nats-server with JetStream, a fresh migrated PostgreSQL
// database, and a recorder projector that tests start, stop and crash.
// Nothing in it is a mock: every test talks to the real log and store.
package spinetest

import (
	"context"
	"fmt"
	"go.uber.org/goleak"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/spinehq/spine/internal/pgtest"
	"github.com/spinehq/spine/migrations"
	"github.com/spinehq/spine/recorder"
	"github.com/spinehq/spine/secrets"
	"github.com/spinehq/spine/streams"
)

// Main is a package's TestMain: a migrated template database, then the
// tests, then a check that no test left a goroutine behind, then each of
// after (what the tests left to remove, e.g. apprig.RemoveBuilt).
func Main(m *testing.M, after ...func()) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	err := pgtest.Setup(ctx, migrations.Key(), Migrate)
	cancel()
	if err != nil {
		fmt.Fprintln(os.Stderr, "spinetest:", err)
		os.Exit(1)
	}
	goleak.VerifyTestMain(m, goleak.Cleanup(func(code int) {
		for _, f := range after {
			f()
		}
		os.Exit(code)
	}))
}

// Migrate brings an empty database to the current schema.
func Migrate(ctx context.Context, conn *pgx.Conn) error {
	_, err := migrations.Up(ctx, conn)
	return err
}

// WaitTimeout bounds every wait; reaching it fails the test.
const WaitTimeout = 60 * time.Second

// Harness is one test's spine: NATS, a database, a recorder projector.
type Harness struct {
	T    testing.TB
	Pool *pgxpool.Pool
	URL  string
	Emb  *streams.Embedded
	NC   *nats.Conn
	JS   jetstream.JetStream
	Pub  *streams.Publisher

	Projector *streams.Projector
	mu        sync.Mutex
	commits   chan struct{}
}

// New starts NATS and creates a database; the projector is not started.
func New(t testing.TB) *Harness {
	t.Helper()
	pool, url := pgtest.New(t)
	emb, err := streams.StartEmbedded(streams.EmbeddedConfig{StoreDir: t.TempDir()})
	if err != nil {
		t.Fatalf("embedded nats: %v", err)
	}
	t.Cleanup(emb.Stop)
	nc, err := emb.Connect()
	if err != nil {
		t.Fatalf("connect nats: %v", err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	if err := streams.EnsureStreams(context.Background(), js, 1); err != nil {
		t.Fatal(err)
	}
	h := &Harness{T: t, Pool: pool, URL: url, Emb: emb, NC: nc, JS: js, Pub: streams.NewPublisher(js),
		commits: make(chan struct{}, 1)}
	return h
}

// RecorderOpts tune StartRecorder.
type RecorderOpts struct {
	Config recorder.Config
	// Recorder is the handler to run; nil means a new one made from Config.
	// One given again runs with what it kept from before (a recorder that
	// loses and regains the lead).
	Recorder  *recorder.Recorder
	BatchSize int
	BeforeAck func(last uint64) error
	// Pool is the database to project into; nil means the harness's.
	Pool *pgxpool.Pool
}

// StartRecorder starts a recorder projector named "recorder".
func (h *Harness) StartRecorder(opts *RecorderOpts) *streams.Projector {
	h.T.Helper()
	if opts == nil {
		opts = &RecorderOpts{}
	}
	pool := h.Pool
	if opts.Pool != nil {
		pool = opts.Pool
	}
	rec := opts.Recorder
	if rec == nil {
		rec = recorder.New(opts.Config)
	}
	p, err := streams.NewProjector(streams.ProjectorConfig{Name: "recorder", Stream: streams.StreamSessions,
		Accept: streams.SubjectMatcher(streams.RecorderSubjects()), Handler: rec, Pool: pool, JS: h.JS, BatchSize: opts.BatchSize,
		MaxWait: 20 * time.Millisecond, Logger: Logger(h.T), Redact: secrets.Bytes, BeforeAck: opts.BeforeAck,
		OnCommit: func(uint64, []streams.Message) { h.signal() }})
	if err != nil {
		h.T.Fatal(err)
	}
	if err := p.Start(context.Background()); err != nil {
		h.T.Fatalf("start projector: %v", err)
	}
	h.mu.Lock()
	h.Projector = p
	h.mu.Unlock()
	h.T.Cleanup(p.Stop)
	return p
}

func (h *Harness) signal() {
	select {
	case h.commits <- struct{}{}:
	default:
	}
}

// Publish validates and publishes envelopes, failing the test on error.
func (h *Harness) Publish(envs ...*streams.Envelope) {
	h.T.Helper()
	for _, e := range envs {
		if _, err := h.Pub.Publish(context.Background(), e, nil); err != nil {
			h.T.Fatalf("publish %s: %v", e.ID, err)
		}
	}
}

// PublishRaw publishes bytes as they are, bypassing validation.
func (h *Harness) PublishRaw(subject string, data []byte, header nats.Header) {
	h.T.Helper()
	msg := nats.NewMsg(subject)
	msg.Data = data
	for k, v := range header {
		msg.Header[k] = v
	}
	if _, err := h.JS.PublishMsg(context.Background(), msg); err != nil {
		h.T.Fatalf("publish raw: %v", err)
	}
}

// LastSeq is the session stream's last sequence.
func (h *Harness) LastSeq() uint64 {
	h.T.Helper()
	s, err := h.JS.Stream(context.Background(), streams.StreamSessions)
	if err != nil {
		h.T.Fatal(err)
	}
	info, err := s.Info(context.Background())
	if err != nil {
		h.T.Fatal(err)
	}
	return info.State.LastSeq
}

// WaitCaughtUp waits until the projector has committed everything published.
func (h *Harness) WaitCaughtUp() {
	h.T.Helper()
	want := h.LastSeq()
	deadline := time.NewTimer(WaitTimeout)
	defer deadline.Stop()
	for {
		h.mu.Lock()
		p := h.Projector
		h.mu.Unlock()
		if p.Checkpoint() >= want {
			return
		}
		select {
		case <-h.commits:
		case <-deadline.C:
			h.T.Fatalf("projector at %d, want %d: not caught up in %s", p.Checkpoint(), want, WaitTimeout)
		}
	}
}

// WaitCommit waits for any projector commit.
func (h *Harness) WaitCommit() {
	h.T.Helper()
	select {
	case <-h.commits:
	case <-time.After(WaitTimeout):
		h.T.Fatalf("no commit in %s", WaitTimeout)
	}
}

// Ctx is a context for test queries.
func Ctx() context.Context { return context.Background() }

// Logger writes to the test's log.
func Logger(t testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}
