package bench

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/spinehq/spine/auth"
)

// OTLP defaults: 500 sessions of 40 events (20 api_request, 20
// tool_result), 10 records an export request, 8 requests at once.
const (
	DefaultOTLPSessions    = 500
	DefaultOTLPEvents      = 40
	DefaultOTLPPerRequest  = 10
	DefaultOTLPConcurrency = 8
)

// The phases' encodings.
const (
	otlpProtobuf = "protobuf"
	otlpJSON     = "json"
)

// OTLPConfig configures `spine bench otlp`.
type OTLPConfig struct {
	// Sessions is the Claude Code sessions each phase sends; 0 means 500.
	Sessions int
	// Events is each session's log records, api_request and tool_result
	// in turn; 0 means 40.
	Events int
	// PerRequest is the records in one export request; 0 means 10.
	PerRequest int
	// Concurrency is the requests in flight at once; 0 means 8.
	Concurrency int
	// Captures is the folder of the real apps' OTLP captures whose records
	// the workload copies; "" means testdata/otlp in the module above the
	// working directory.
	Captures string
	// DatabaseURL is as Config.DatabaseURL.
	DatabaseURL string
	// Logger receives progress; nil discards it.
	Logger *slog.Logger
}

func (c OTLPConfig) withDefaults() (OTLPConfig, error) {
	c.Sessions = cmp.Or(c.Sessions, DefaultOTLPSessions)
	c.Events = cmp.Or(c.Events, DefaultOTLPEvents)
	c.PerRequest = cmp.Or(c.PerRequest, DefaultOTLPPerRequest)
	c.Concurrency = cmp.Or(c.Concurrency, DefaultOTLPConcurrency)
	if c.Logger == nil {
		c.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if c.Captures == "" {
		wd, _ := os.Getwd()
		root, ok := moduleRoot(wd)
		if !ok {
			return c, fmt.Errorf("%w: no go.mod above the working directory, so no testdata/otlp: pass --captures", ErrInvalidConfig)
		}
		c.Captures = filepath.Join(root, "testdata", "otlp")
	}
	switch {
	case c.Sessions < 1 || c.Sessions > 100000:
		return c, fmt.Errorf("%w: sessions %d, want 1..100000", ErrInvalidConfig, c.Sessions)
	case c.Events < 2 || c.Events > 10000:
		return c, fmt.Errorf("%w: events %d, want 2..10000 a session", ErrInvalidConfig, c.Events)
	case c.PerRequest < 1 || c.PerRequest > 1000:
		return c, fmt.Errorf("%w: per-request %d, want 1..1000", ErrInvalidConfig, c.PerRequest)
	case c.Concurrency < 1 || c.Concurrency > 1000:
		return c, fmt.Errorf("%w: concurrency %d, want 1..1000", ErrInvalidConfig, c.Concurrency)
	}
	return c, nil
}

// OTLPResult is what `spine bench otlp` prints.
type OTLPResult struct {
	Benchmark   string         `json:"benchmark"` // "otlp"
	Environment Environment    `json:"environment"`
	Postgres    Postgres       `json:"postgres"`
	Load        LoadAverage    `json:"loadAverage"`
	Parameters  OTLPParameters `json:"parameters"`
	// Protobuf and JSON are the workload posted to /otlp/v1/logs as
	// application/x-protobuf and application/json.
	Protobuf OTLPPhase `json:"protobuf"`
	JSON     OTLPPhase `json:"json"`
	// Raw is the baseline of the same run (see otlpBaseline): its
	// messages are the envelopes the door makes of as many records.
	Raw      Throughput `json:"raw"`
	Baseline string     `json:"baseline"`
	// RatioProtobuf and RatioJSON are each phase's events/s over the
	// baseline's messages/s.
	RatioProtobuf float64     `json:"ratioProtobuf"`
	RatioJSON     float64     `json:"ratioJson"`
	Verified      bool        `json:"verified"`
	Checks        []OTLPCheck `json:"verification"`
	DeadLetters   int         `json:"deadLetters"` // in the whole run: none when verified
	RawRows       int         `json:"rawRows"`     // the baseline's table: raw.messages when verified
	Seconds       float64     `json:"seconds"`
}

// otlpBaseline says what the baseline is and why it is that one.
const otlpBaseline = "raw: as many records of fresh sessions, translated before the clock starts as the door " +
	"translates them (telemetry.Translate), their session.telemetry envelopes' JSON published to a plain stream " +
	"with Nats-Msg-Id, fetched in batches of 500 and written with one COPY a batch (a row per envelope, keyed " +
	"by session, kind and request or tool use id), as spine bench ingest's raw path does for chunks: the floor " +
	"of the log and PostgreSQL under every spine door. Not POST /v1/ingest: it refuses a session.telemetry of a " +
	"session no start claimed (404 unknown_session), which every telemetry session is; with a start added the " +
	"sessions would be the door's, whose telemetry tools are no steps, so the recorder would do other work"

// OTLPParameters echo the configuration after defaults.
type OTLPParameters struct {
	Sessions    int    `json:"sessions"`
	Events      int    `json:"eventsPerSession"`
	PerRequest  int    `json:"recordsPerRequest"`
	Concurrency int    `json:"concurrency"`
	OrgQuota    string `json:"orgQuota"`
}

// otlpQuotaNote says why the run's org has no ingest quota.
const otlpQuotaNote = "off: every session is one org's, and its default quota (2 MiB/s, 5,000 envelopes/s, " +
	"SPINE_ORG_INGEST_BYTES_PER_SEC) would be measured instead of the door; an org's events/s under it is about " +
	"the quota over the bytes per event (bytes / events)"

// OTLPPhase is one way in: every request posted, timed from the first
// POST until the recorder has committed the last envelope the phase made.
type OTLPPhase struct {
	Door        string         `json:"door"`
	Requests    int            `json:"requests"`
	Events      int            `json:"events"` // log records, or envelopes for the baseline: one each
	Bytes       int64          `json:"bytes"`  // request bodies
	PostSeconds float64        `json:"postSeconds"`
	Seconds     float64        `json:"seconds"`
	EventsPerS  float64        `json:"eventsPerSec"`
	RequestsPer float64        `json:"requestsPerSec"`
	MBPerSecond float64        `json:"mbPerSec"`
	Statuses    map[string]int `json:"statuses"`
	Retried     int64          `json:"retried429"`
}

// RunOTLP measures OTLP log events/s through spine beside the /v1/ingest
// baseline of the same run (docs/performance.md).
func RunOTLP(ctx context.Context, cfg OTLPConfig) (res *OTLPResult, err error) {
	began := time.Now()
	if cfg, err = cfg.withDefaults(); err != nil {
		return nil, err
	}
	tmpl, err := loadTemplates(cfg.Captures)
	if err != nil {
		return nil, err
	}
	res = &OTLPResult{Benchmark: "otlp", Environment: environment(), Load: LoadAverage{Start: loadAverage()},
		Baseline: otlpBaseline, Parameters: OTLPParameters{Sessions: cfg.Sessions, Events: cfg.Events,
			PerRequest: cfg.PerRequest, Concurrency: cfg.Concurrency, OrgQuota: otlpQuotaNote}}
	cfg.Logger.Info("starting node and database")
	// The org's ingest quota is off: one org's whole workload is what is
	// measured, not the quota (otlpQuotaNote).
	tb, err := startTestbed(ctx, Config{DatabaseURL: cfg.DatabaseURL, Logger: cfg.Logger, OrgBytesPerSec: -1, OrgEnvelopesPerSec: -1})
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, tb.close()) }()
	if res.Postgres, err = postgres(ctx, tb.node.Pool, tb.db.source); err != nil {
		return nil, err
	}
	token, err := tb.node.Signer.Mint(auth.Claims{Org: benchOrg, Member: benchMember}, 24*time.Hour)
	if err != nil {
		return nil, err
	}
	ob := &otlpBed{tb: tb, cfg: cfg, tmpl: tmpl, run: randomHex(3), base: "http://" + tb.node.HTTPAddr(), token: token}
	cfg.Logger.Info("raw baseline", "sessions", cfg.Sessions, "events", cfg.Events)
	if res.Raw, err = ob.rawPhase(ctx); err != nil {
		return nil, err
	}
	for _, ph := range []struct {
		encoding string
		out      *OTLPPhase
	}{{otlpProtobuf, &res.Protobuf}, {otlpJSON, &res.JSON}} {
		cfg.Logger.Info("phase", "encoding", ph.encoding, "sessions", cfg.Sessions, "events", cfg.Events)
		if *ph.out, err = ob.phase(ctx, ph.encoding); err != nil {
			return nil, err
		}
	}
	res.RatioProtobuf = round(res.Protobuf.EventsPerS / res.Raw.MessagesPerSecond)
	res.RatioJSON = round(res.JSON.EventsPerS / res.Raw.MessagesPerSecond)
	if res.Checks, res.DeadLetters, err = ob.verify(ctx); err != nil {
		return nil, err
	}
	if err := tb.node.Pool.QueryRow(ctx, `SELECT count(*) FROM `+rawTelemetryTable).Scan(&res.RawRows); err != nil {
		return nil, fmt.Errorf("verify raw: %w", err)
	}
	res.Verified = res.DeadLetters == 0 && res.RawRows == res.Raw.Messages && otlpVerified(res.Checks)
	res.Load.End = loadAverage()
	res.Seconds = round(time.Since(began).Seconds())
	if !res.Verified {
		return res, fmt.Errorf("%w: %+v", ErrNotVerified, res.Checks)
	}
	return res, nil
}
