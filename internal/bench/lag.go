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
	"strconv"
	"strings"
	"time"

	"github.com/spinehq/spine/auth"
)

// Lag defaults.
const (
	DefaultLagRate       = 20
	DefaultLagLines      = 400
	DefaultLagSessions   = 4
	DefaultLagPoll       = 20 * time.Millisecond
	DefaultLagRawSeconds = 10 * time.Second
)

// LagConfig configures `spine bench lag`.
type LagConfig struct {
	// Collect and Run pick the phases (Run: spine run of Claude Code's
	// stream-json, then of Codex's exec --json); both false means both.
	Collect, Run bool
	// Rate is the lines per second written in each phase; 0 means 20.
	Rate int
	// Lines is the lines written in each phase, after a warm-up; 0 means 400.
	Lines int
	// Sessions is how many transcript files the collect phase appends to at
	// once (each a session; a finished one is replaced); 0 means 4. The run
	// phase's app writes one session after another, as an app does.
	Sessions int
	// Poll is the transcript reader's fallback interval; 0 means 20ms. It
	// reads a session at once when the recorder commits an awaited chunk.
	Poll time.Duration
	// RawSeconds is how long the raw baseline offers chunks at Rate; 0
	// means 10s and NoLatency (any negative value) skips it.
	RawSeconds time.Duration
	// Fixtures is the folder of real app output (claude-transcripts/,
	// codex-rollout/, claude-stream-json/); "" means ../shared/fixtures
	// beside the directory holding go.mod above the working directory.
	Fixtures string
	// Spine is the spine binary whose `collect` and `run` are measured; ""
	// means this process's own executable.
	Spine string
	// DatabaseURL is as Config.DatabaseURL.
	DatabaseURL string
	// Logger receives progress; nil discards it.
	Logger *slog.Logger
}

func (c LagConfig) withDefaults() (LagConfig, error) {
	if !c.Collect && !c.Run {
		c.Collect, c.Run = true, true
	}
	c.Rate = cmp.Or(c.Rate, DefaultLagRate)
	c.Lines = cmp.Or(c.Lines, DefaultLagLines)
	c.Sessions = cmp.Or(c.Sessions, DefaultLagSessions)
	c.Poll = cmp.Or(c.Poll, DefaultLagPoll)
	c.RawSeconds = cmp.Or(c.RawSeconds, DefaultLagRawSeconds)
	if c.Fixtures == "" {
		wd, _ := os.Getwd()
		root, ok := moduleRoot(wd)
		if !ok {
			return c, fmt.Errorf("%w: no go.mod above the working directory, so no ../shared/fixtures: pass --fixtures", ErrInvalidConfig)
		}
		c.Fixtures = filepath.Join(root, "..", "shared", "fixtures")
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if c.Spine == "" {
		exe, err := os.Executable()
		if err != nil {
			return c, fmt.Errorf("%w: no spine binary: %v", ErrInvalidConfig, err)
		}
		c.Spine = exe
	}
	switch {
	case c.Rate < 1 || c.Rate > 10000:
		return c, fmt.Errorf("%w: rate %d, want 1..10000 lines/s", ErrInvalidConfig, c.Rate)
	case c.Lines < 1:
		return c, fmt.Errorf("%w: lines %d, want 1 or more", ErrInvalidConfig, c.Lines)
	case c.Sessions < 1 || c.Sessions > 1000:
		return c, fmt.Errorf("%w: sessions %d, want 1..1000", ErrInvalidConfig, c.Sessions)
	case c.Poll < time.Millisecond:
		return c, fmt.Errorf("%w: poll %s, want 1ms or more", ErrInvalidConfig, c.Poll)
	}
	return c, nil
}

// LagResult is what `spine bench lag` prints.
type LagResult struct {
	Benchmark   string        `json:"benchmark"` // "lag"
	Environment Environment   `json:"environment"`
	Postgres    Postgres      `json:"postgres"`
	Load        LoadAverage   `json:"loadAverage"`
	Parameters  LagParameters `json:"parameters"`
	Collect     *LagPhase     `json:"collect,omitempty"`
	Run         *LagPhase     `json:"run,omitempty"`      // spine run, Claude Code's stream-json
	RunCodex    *LagPhase     `json:"runCodex,omitempty"` // spine run --app codex, exec --json
	// Raw is the baseline of the same run: chunks published straight to
	// JetStream at the same rate and timed to the recorder's commit, as
	// `spine bench ingest`'s latency phase does (its code).
	Raw      Latency       `json:"raw"`
	Observer ObserverStats `json:"observer"`
	Verified bool          `json:"verified"`
	Seconds  float64       `json:"seconds"`
}

// LoadAverage is the machine's 1-minute load average when the run began
// and ended: on a shared machine it says how loaded the figures are.
type LoadAverage struct {
	Start float64 `json:"start"`
	End   float64 `json:"end"`
}

// LagParameters echo the configuration after defaults.
type LagParameters struct {
	Rate       int     `json:"rate"` // lines/s written
	Lines      int     `json:"lines"`
	Sessions   int     `json:"sessions"`
	PollMs     float64 `json:"pollMs"`
	RawSeconds float64 `json:"rawSeconds"`
}

// LagPhase is one way in, line written → readable through spine.
type LagPhase struct {
	// Producer says what wrote the lines and what read them.
	Producer     string   `json:"producer"`
	Formats      []string `json:"formats"`
	Sessions     int      `json:"sessions"`
	LinesWritten int      `json:"linesWritten"`
	OfferedRate  int      `json:"offeredRate"`
	AchievedRate float64  `json:"achievedRate"`
	Seconds      float64  `json:"seconds"`
	// Committed is line written → every envelope its translation makes
	// committed by the recorder (the OnCommit hook), over the lines that
	// make any (a tool call's line makes none until its result's line).
	Committed LagFigures `json:"committed"`
	// Readable is line written → each of its text chunks returned by GET
	// /v1/sessions/{id}/transcript, over the lines that make text.
	Readable LagFigures `json:"readable"`
	// ObserverAdds is Readable − Committed on the same lines: the
	// transcript read's own delay.
	ObserverAdds LagFigures `json:"observerAdds"`
}

// LagFigures are nearest-rank percentiles over lines.
type LagFigures struct {
	Lines int     `json:"lines"`
	P50Ms float64 `json:"p50Ms"`
	P90Ms float64 `json:"p90Ms"`
	P99Ms float64 `json:"p99Ms"`
	MaxMs float64 `json:"maxMs"`
}

// ObserverStats say how readability was observed and what that costs.
type ObserverStats struct {
	How      string  `json:"how"`
	PollMs   float64 `json:"pollMs"`
	Gets     int     `json:"gets"`
	GetP50Ms float64 `json:"getP50Ms"`
	GetP99Ms float64 `json:"getP99Ms"`
}

const observerHow = "GET /v1/sessions/{id}/transcript?since=CURSOR (there is no stream endpoint for transcripts), " +
	"issued when the recorder commits an awaited envelope (OnCommit hook) and every pollMs while a chunk is awaited; " +
	"a chunk's readable time is when the answer holding it arrived, so the read adds about one GET to it (observerAdds)"

func figures(lat []time.Duration) LagFigures {
	l := summarize(lat, 1, time.Second)
	return LagFigures{Lines: l.Chunks, P50Ms: l.P50Ms, P90Ms: l.P90Ms, P99Ms: l.P99Ms, MaxMs: l.MaxMs}
}

// RunLag measures line written → readable through spine for `spine
// collect` and `spine run` on a fresh node, beside the raw ingest latency
// of the same run (docs/performance.md).
func RunLag(ctx context.Context, cfg LagConfig) (res *LagResult, err error) {
	began := time.Now()
	if cfg, err = cfg.withDefaults(); err != nil {
		return nil, err
	}
	log := cfg.Logger
	res = &LagResult{Benchmark: "lag", Environment: environment(), Load: LoadAverage{Start: loadAverage()},
		Parameters: LagParameters{Rate: cfg.Rate, Lines: cfg.Lines, Sessions: cfg.Sessions, PollMs: ms(cfg.Poll),
			RawSeconds: max(cfg.RawSeconds, 0).Seconds()}}
	log.Info("starting node and database")
	tb, err := startTestbed(ctx, Config{DatabaseURL: cfg.DatabaseURL, Logger: log})
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, tb.close()) }()
	if res.Postgres, err = postgres(ctx, tb.node.Pool, tb.db.source); err != nil {
		return nil, err
	}
	if cfg.RawSeconds > 0 {
		log.Info("raw baseline", "rate", cfg.Rate, "seconds", cfg.RawSeconds.Seconds())
		rawCfg := Config{Sessions: DefaultSessions, Rate: cfg.Rate, LatencyDuration: cfg.RawSeconds}
		w := newWorkload(randomHex(4), DefaultPayload, 0)
		if res.Raw, _, err = runLatency(ctx, tb, w, rawCfg); err != nil {
			return nil, err
		}
	}
	lb, err := newLagBed(ctx, tb, cfg)
	if err != nil {
		return nil, err
	}
	defer lb.stop()
	if cfg.Collect {
		log.Info("collect phase", "lines", cfg.Lines, "rate", cfg.Rate)
		if res.Collect, err = lb.collectPhase(ctx); err != nil {
			return nil, err
		}
	}
	if cfg.Run {
		log.Info("run phase", "app", "claude-code", "lines", cfg.Lines, "rate", cfg.Rate)
		if res.Run, err = lb.runPhase(ctx, "claude-code"); err != nil {
			return nil, err
		}
		log.Info("run phase", "app", "codex", "lines", cfg.Lines, "rate", cfg.Rate)
		if res.RunCodex, err = lb.runPhase(ctx, "codex"); err != nil {
			return nil, err
		}
	}
	gets := lb.obs.getTimes()
	g := summarize(gets, 1, time.Second)
	res.Observer = ObserverStats{How: observerHow, PollMs: ms(cfg.Poll), Gets: len(gets), GetP50Ms: g.P50Ms, GetP99Ms: g.P99Ms}
	res.Verified = true // every phase waited for every line's envelopes and text, or failed
	res.Load.End = loadAverage()
	res.Seconds = round(time.Since(began).Seconds())
	return res, nil
}

// lagBed is a lag run's node, HTTP reader and observer.
type lagBed struct {
	tb     *testbed
	cfg    LagConfig
	base   string
	token  string
	obs    *observer
	cancel context.CancelFunc
	done   chan struct{} // closed when the observer's reader has returned
	tag    string
}

func newLagBed(ctx context.Context, tb *testbed, cfg LagConfig) (*lagBed, error) {
	token, err := tb.node.Signer.Mint(auth.Claims{Org: benchOrg, Member: benchMember}, 24*time.Hour)
	if err != nil {
		return nil, err
	}
	base := "http://" + tb.node.HTTPAddr()
	lb := &lagBed{tb: tb, cfg: cfg, base: base, token: token, obs: newObserver(newPoster(base, token), cfg.Poll),
		tag: randomHex(3), done: make(chan struct{})}
	tb.commits.setTap(lb.obs.onCommit)
	octx, cancel := context.WithCancel(ctx)
	lb.cancel = cancel
	go func() {
		defer close(lb.done)
		lb.obs.run(octx)
	}()
	return lb, nil
}

func (lb *lagBed) stop() {
	lb.cancel()
	<-lb.done
	lb.tb.commits.setTap(nil)
}

// loadAverage is the 1-minute load average (0 where /proc/loadavg is missing).
func loadAverage() float64 {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0
	}
	f, _ := strconv.ParseFloat(strings.Fields(string(data) + " 0")[0], 64)
	return f
}
