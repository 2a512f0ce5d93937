package node

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/spinehq/spine/auth"
	"github.com/spinehq/spine/desktop"
	"github.com/spinehq/spine/internal/config"
	"github.com/spinehq/spine/internal/pgboot"
	"github.com/spinehq/spine/library"
	"github.com/spinehq/spine/migrations"
	"github.com/spinehq/spine/recorder"
	"github.com/spinehq/spine/secrets"
	"github.com/spinehq/spine/server"
	"github.com/spinehq/spine/streams"
)

// Node is a running spine.
type Node struct {
	cfg       config.Config
	opts      *Options
	log       *slog.Logger
	pg        *pgboot.Result
	Pool      *pgxpool.Pool
	embedded  *streams.Embedded
	NC        *nats.Conn
	JS        jetstream.JetStream
	Signer    *auth.Signer
	Registry  *prometheus.Registry
	Publisher *streams.Publisher
	recorder  *streams.Projector
	// Library is the node's blob store (nil with NoProjectors until set).
	Library          *library.PGStore
	Desktop          *desktop.Service // desktop tasks, runners, remote sessions
	projMu           sync.Mutex
	projectors       []*streams.Projector
	partitions       *partitionManager
	accounting       *streams.Projector
	sweeper          *recorder.Sweeper
	projectorMetrics *streams.Metrics
	http             *http.Server
	listener         net.Listener
	stops            []func()
}

// Options tune a node beyond its Config; nil means defaults.
type Options struct {
	// Projector settings passed to the recorder projector.
	BatchSize int
	OnCommit  func(last uint64, msgs []streams.Message)
	OnTimes   func(streams.BatchTimes)
	// NoProjectors starts only the API (tests start projectors themselves).
	NoProjectors bool
	// NoHTTP starts no HTTP server (spine rebuild).
	NoHTTP bool
	// ProjectorPrefix is put before every projector's durable name, so a
	// rebuild's projectors consume the log beside the live ones.
	ProjectorPrefix string
	// NoSweeper runs no sweeper (spine rebuild: it only replays the log,
	// never adds to it).
	NoSweeper bool
	// AnalyzeInterval is how often stale planner statistics are refreshed
	// (AnalyzeStale); 0 means DefaultAnalyzeInterval, negative never.
	AnalyzeInterval time.Duration
}

// Start brings a node up. On error, whatever was started is stopped.
func Start(ctx context.Context, cfg config.Config, log *slog.Logger, opts *Options) (n *Node, err error) {
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if opts == nil {
		opts = &Options{}
	}
	n = &Node{cfg: cfg, log: log, opts: opts, Registry: prometheus.NewRegistry()}
	started := n
	defer func() {
		if err != nil {
			started.Stop()
		}
	}()
	n.Registry.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	// Compile the redaction rules now (tens of milliseconds, once per
	// process) rather than in the first request that carries text.
	secrets.Default()
	if err := os.MkdirAll(cfg.DataDir, 0o755); err != nil {
		return nil, fmt.Errorf("data dir: %w", err)
	}
	steps := []func(context.Context) error{n.startPostgres, n.migrate, n.startAnalyzer, n.startNATS, n.loadSigner}
	if !opts.NoProjectors {
		steps = append(steps, func(ctx context.Context) error { return n.startProjectors(ctx, opts) })
	}
	steps = append(steps, func(ctx context.Context) error { return n.startDesktop(ctx, opts.NoProjectors) })
	if !opts.NoHTTP {
		steps = append(steps, n.startHTTP)
	}
	for _, step := range steps {
		if err := step(ctx); err != nil {
			return nil, err
		}
	}
	return n, nil
}

func (n *Node) startPostgres(ctx context.Context) error {
	res, err := pgboot.Find(ctx, pgboot.Options{URL: n.cfg.DatabaseURL, DataDir: n.cfg.DataDir, Logger: n.log})
	if err != nil {
		return err
	}
	n.pg = res
	n.stops = append(n.stops, func() {
		if err := res.Stop(); err != nil {
			n.log.Warn("stop private postgres", "err", err)
		}
	})
	n.log.Info("postgres ready", "source", res.Source)
	pcfg, err := pgxpool.ParseConfig(res.URL)
	if err != nil {
		return fmt.Errorf("database url: %w", err)
	}
	// Every projector holds a connection for its leadership lock (and a
	// partitioned node one per partition it may lead, plus its presence):
	// leave room for the API beside them.
	pcfg.MaxConns = max(pcfg.MaxConns, int32(12+n.cfg.Partitions))
	// Plan every statement with its values. A prepared statement's generic
	// plan is made once per connection, often while the tables are young,
	// and then kept: GET /v1/sessions/{id} took 5 ms on 17k sessions by
	// scanning the member's index instead of probing the primary key.
	// Planning each time costs tens of microseconds. A URL that sets
	// plan_cache_mode keeps its own.
	if _, set := pcfg.ConnConfig.RuntimeParams["plan_cache_mode"]; !set {
		pcfg.ConnConfig.RuntimeParams["plan_cache_mode"] = "force_custom_plan"
	}
	n.Pool, err = pgxpool.NewWithConfig(ctx, pcfg)
	if err != nil {
		return fmt.Errorf("connect postgres: %w", err)
	}
	n.stops = append(n.stops, n.Pool.Close)
	return nil
}

func (n *Node) migrate(ctx context.Context) error {
	conn, err := n.Pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	defer conn.Release()
	applied, err := migrations.Up(ctx, conn.Conn())
	if err != nil {
		return err
	}
	if len(applied) > 0 {
		n.log.Info("migrations applied", "versions", applied)
	}
	return nil
}

func (n *Node) startNATS(ctx context.Context) error {
	var err error
	if n.cfg.NATSURL != "" {
		if err := n.connectNATS(); err != nil {
			return err
		}
	} else {
		if err := n.startEmbedded(); err != nil {
			return err
		}
	}
	n.stops = append(n.stops, func() {
		// Projectors have drained and HTTP is closed: flush and close.
		_ = n.NC.FlushTimeout(5 * time.Second)
		n.NC.Close()
	})
	if n.JS, err = jetstream.New(n.NC); err != nil {
		return fmt.Errorf("jetstream: %w", err)
	}
	n.Publisher = streams.NewPublisher(n.JS)
	return streams.EnsureStreams(ctx, n.JS, n.cfg.Replicas)
}

func (n *Node) connectNATS() error {
	opts, err := NATSAuth(n.cfg, n.cfg.NATSURL)
	if err != nil {
		return fmt.Errorf("%s: %w", config.EnvNATSURL, err)
	}
	n.NC, err = nats.Connect(n.cfg.NATSURL, append(opts, nats.Name("spine"), nats.MaxReconnects(-1))...)
	if errors.Is(err, nats.ErrAuthorization) {
		return fmt.Errorf("connect %s=%s: %w (%s)", config.EnvNATSURL, RedactNATSURL(n.cfg.NATSURL), err, NATSAuthHint(n.cfg))
	}
	if err != nil {
		return fmt.Errorf("connect %s=%s: %w", config.EnvNATSURL, RedactNATSURL(n.cfg.NATSURL), err)
	}
	return nil
}

// startEmbedded runs the in-process server. Its client port, when it has
// one, takes only clients with the token: any local process could
// otherwise publish as any org and member.
func (n *Node) startEmbedded() error {
	ecfg := streams.EmbeddedConfig{StoreDir: filepath.Join(n.cfg.DataDir, "nats"), Listen: n.cfg.NATSListen}
	if ecfg.Listen == "off" {
		ecfg.Listen = ""
	}
	if ecfg.Listen != "" {
		var err error
		if ecfg.Token, err = embeddedToken(n.cfg); err != nil {
			return err
		}
	}
	emb, err := streams.StartEmbedded(ecfg)
	if err != nil {
		return fmt.Errorf("%w (set %s=off or another address)", err, config.EnvNATSListen)
	}
	n.embedded = emb
	n.stops = append(n.stops, emb.Stop)
	n.NC, err = emb.Connect()
	if err != nil {
		return fmt.Errorf("connect embedded nats: %w", err)
	}
	return nil
}

func (n *Node) loadSigner(context.Context) error {
	var secret []byte
	var err error
	if n.cfg.TokenSecret != "" {
		secret, err = auth.DecodeSecret(n.cfg.TokenSecret)
		if err != nil {
			return fmt.Errorf("%s: %w", config.EnvTokenSecret, err)
		}
	} else if secret, err = auth.LoadOrCreateSecret(filepath.Join(n.cfg.DataDir, "token.secret")); err != nil {
		return err
	}
	n.Signer, err = auth.NewSigner(secret)
	return err
}

func (n *Node) startProjectors(ctx context.Context, opts *Options) error {
	n.Library = library.NewPGStore(library.NewMetrics(n.Registry))
	if n.cfg.Partitions > 1 {
		if err := n.startPartitions(ctx, opts); err != nil {
			return err
		}
	} else {
		rec := recorder.New(recorder.Config{Logger: n.log, Registerer: n.Registry, Blobs: n.Library, FileCap: n.cfg.FileCap})
		p, err := n.StartProjector(ctx, streams.ProjectorConfig{Name: "recorder", Stream: streams.StreamSessions,
			Accept: streams.SubjectMatcher(streams.RecorderSubjects()), Handler: rec, BatchSize: opts.BatchSize,
			OnCommit: opts.OnCommit, OnTimes: opts.OnTimes})
		if err != nil {
			return err
		}
		n.recorder = p
	}
	_, err := n.StartProjector(ctx, streams.ProjectorConfig{Name: "library", Stream: streams.StreamLibrary,
		Handler: library.Projector{}})
	if err != nil {
		return err
	}
	if err := n.startAccounting(ctx); err != nil {
		return err
	}
	if opts.NoSweeper {
		return nil
	}
	return n.startSweeper(ctx)
}

// startSweeper ends the sessions that went quiet or ignored a cancel. It
// runs beside the projectors on every node; one sweeps at a time.
func (n *Node) startSweeper(ctx context.Context) error {
	w, err := recorder.NewSweeper(recorder.SweeperConfig{Pool: n.Pool, Publisher: n.Publisher,
		IdleTimeout: n.cfg.IdleTimeout, CancelGrace: n.cfg.CancelGrace, TelemetryIdle: n.cfg.TelemetryIdle,
		Logger: n.log, Registerer: n.Registry})
	if err != nil {
		return err
	}
	if err := w.Start(ctx); err != nil {
		return err
	}
	n.sweeper = w
	return nil
}

// Projectors are the projectors this node runs now.
func (n *Node) Projectors() []*streams.Projector {
	n.projMu.Lock()
	defer n.projMu.Unlock()
	return slices.Clone(n.projectors)
}

func (n *Node) removeProjector(p *streams.Projector) {
	n.projMu.Lock()
	defer n.projMu.Unlock()
	n.projectors = slices.DeleteFunc(n.projectors, func(q *streams.Projector) bool { return q == p })
}

// StartProjector starts a projector on this node's database and log, with
// its logger, metrics and redaction; Stop stops it. cfg needs Name, Stream
// and Handler.
func (n *Node) StartProjector(ctx context.Context, cfg streams.ProjectorConfig) (*streams.Projector, error) {
	if n.projectorMetrics == nil {
		n.projectorMetrics = streams.NewMetrics(n.Registry)
	}
	cfg.Pool, cfg.JS, cfg.Logger, cfg.Metrics = n.Pool, n.JS, n.log, n.projectorMetrics
	cfg.Name = n.opts.ProjectorPrefix + cfg.Name
	if cfg.Redact == nil {
		cfg.Redact = secrets.Bytes
	}
	p, err := streams.NewProjector(cfg)
	if err != nil {
		return nil, err
	}
	if err := p.Preflight(ctx); err != nil {
		return nil, err
	}
	if err := p.Start(ctx); err != nil {
		return nil, err
	}
	n.projMu.Lock()
	n.projectors = append(n.projectors, p)
	n.projMu.Unlock()
	return p, nil
}

func (n *Node) startHTTP(ctx context.Context) error {
	if n.Library == nil {
		n.Library = library.NewPGStore(library.NewMetrics(n.Registry))
	}
	api := server.New(server.Config{Pool: n.Pool, Publisher: n.Publisher, Signer: n.Signer,
		Gatherer: n.Registry, Registry: n.Registry, Logger: n.log, Ready: n.ready, Library: n.Library, JS: n.JS, MaxUploadBytes: n.cfg.MaxUploadBytes,
		Desktop: n.Desktop, MCP: n.mcp(), Limits: n.Limits(), CancelGrace: n.cfg.CancelGrace})
	ln, err := net.Listen("tcp", n.cfg.HTTPAddr)
	if err != nil {
		return fmt.Errorf("listen %s (set %s): %w", n.cfg.HTTPAddr, config.EnvHTTPAddr, err)
	}
	n.listener = ln
	// Bodies are bounded by the API's minimum rate rather than a
	// ReadTimeout: a ReadTimeout would also cancel the event streams,
	// which never end by themselves. An idle keep-alive connection is
	// closed after two minutes.
	n.http = &http.Server{Handler: api, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute}
	n.http.RegisterOnShutdown(api.CloseStreams) // the pages' event streams never end by themselves
	n.desktopHTTP(n.http)
	go func() {
		if err := n.http.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			n.log.Error("http server", "err", err)
		}
	}()
	return nil
}

// Limits are the request limits the node's API enforces, defaults filled
// in (a negative one is off).
func (n *Node) Limits() server.Limits {
	c := n.cfg
	return server.Limits{BodyMinRate: c.BodyMinRate, BodyGrace: c.BodyGrace, InflightBytes: c.InflightBytes,
		OrgBytesPerSec: c.OrgBytesPerSec, OrgEnvelopesPerSec: c.OrgEnvelopesPerSec}.WithDefaults()
}

// ready is /readyz: the log is connected and no projector this node runs
// has stopped or keeps failing (each is named, with what fails).
func (n *Node) ready(context.Context) error {
	if n.NC == nil || !n.NC.IsConnected() {
		return errors.New("nats: not connected")
	}
	var stuck []string
	for _, p := range n.Projectors() {
		if err := p.Health(); err != nil {
			stuck = append(stuck, err.Error())
		}
	}
	if len(stuck) > 0 {
		return errors.New(strings.Join(stuck, "; "))
	}
	return nil
}

// HTTPAddr is where the API listens.
func (n *Node) HTTPAddr() string { return n.listener.Addr().String() }

// NATSURL is where NATS clients reach the log ("" for an in-process-only server).
func (n *Node) NATSURL() string {
	if n.embedded != nil {
		return n.embedded.ClientURL()
	}
	return n.cfg.NATSURL
}

// PostgresSource says where PostgreSQL came from: env, local or private.
func (n *Node) PostgresSource() string { return n.pg.Source }

// Recorder is the session projector (nil with NoProjectors).
func (n *Node) Recorder() *streams.Projector { return n.recorder }

// DevToken mints a 24-hour token for org "dev", member "dev".
func (n *Node) DevToken() (string, error) {
	return n.Signer.Mint(auth.Claims{Org: "dev", Member: "dev"}, 24*time.Hour)
}

// Stop drains and stops everything, in reverse order of start.
func (n *Node) Stop() {
	if n.http != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_ = n.http.Shutdown(ctx)
		cancel()
	}
	if n.partitions != nil {
		n.partitions.stop()
	}
	if n.sweeper != nil {
		n.sweeper.Stop()
	}
	for _, p := range n.Projectors() {
		p.Stop()
	}
	for i := len(n.stops) - 1; i >= 0; i-- {
		n.stops[i]()
	}
	n.stops = nil
}
