package bench

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/spinehq/spine/auth"
	"github.com/spinehq/spine/streams"
)

// UI defaults: the session the issue names (10,000 chunks, 1,000 steps).
const (
	DefaultUIChunks  = 10000
	DefaultUISteps   = 1000
	DefaultUISamples = 50
	// uiHoleEvery: one seq in this many is never sent, so the page's holes
	// are read and placed too.
	uiHoleEvery = 1000
	uiPayload   = 120
)

// UIConfig configures `spine bench ui`.
type UIConfig struct {
	Chunks      int          // stdout chunks of the session; 0 means DefaultUIChunks
	Steps       int          // command events (steps) among them; 0 means DefaultUISteps
	Samples     int          // renders timed; 0 means DefaultUISamples
	DatabaseURL string       // as Config.DatabaseURL
	Logger      *slog.Logger // nil discards progress
}

// UIResult is what `spine bench ui` prints.
type UIResult struct {
	Benchmark   string      `json:"benchmark"` // "ui"
	Environment Environment `json:"environment"`
	Postgres    Postgres    `json:"postgres"`
	Sent        UISent      `json:"sent"`
	// Page is GET /ui/sessions/{id} over HTTP: auth, the reads, rendering.
	Page UIRender `json:"page"`
	// Raw is the same rows read with plain SQL on the same pool, nothing
	// rendered: the session, its router call, 500 chunks, the hole notes,
	// 100 steps and their observations, 100 artifacts.
	Raw UIRender `json:"raw"`
	// Ratio is the page's p50 over the raw reads' p50.
	Ratio float64 `json:"ratio"`
	// Verified: the page held one page of each list (500 lines, 100
	// steps), no more and no fewer.
	Verified bool `json:"verified"`
}

// UISent is the session the run recorded.
type UISent struct {
	Chunks int `json:"chunks"` // stdout chunks
	Steps  int `json:"steps"`  // command events
	Holes  int `json:"holes"`  // seqs never sent
}

// UIRender is one way of reading the first render, timed over Samples.
type UIRender struct {
	Samples int     `json:"samples"`
	P50Ms   float64 `json:"p50Ms"`
	P99Ms   float64 `json:"p99Ms"`
	MaxMs   float64 `json:"maxMs"`
	Bytes   int     `json:"bytes,omitempty"` // the page's size
	Lines   int     `json:"lines"`           // transcript lines (chunks and holes) it holds
	Steps   int     `json:"steps"`           // steps it holds
}

func (c UIConfig) withDefaults() (UIConfig, error) {
	c.Chunks = cmp.Or(c.Chunks, DefaultUIChunks)
	c.Steps = cmp.Or(c.Steps, DefaultUISteps)
	c.Samples = cmp.Or(c.Samples, DefaultUISamples)
	if c.Logger == nil {
		c.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if c.Chunks < 1 || c.Steps < 1 || c.Samples < 1 {
		return c, fmt.Errorf("%w: chunks, steps and samples ≥ 1", ErrInvalidConfig)
	}
	return c, nil
}

// RunUI records one long session on a fresh node and times the first
// render of its page beside the plain reads of the same rows.
func RunUI(ctx context.Context, cfg UIConfig) (res *UIResult, err error) {
	if cfg, err = cfg.withDefaults(); err != nil {
		return nil, err
	}
	tb, err := startTestbed(ctx, Config{DatabaseURL: cfg.DatabaseURL, Logger: cfg.Logger})
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, tb.close()) }()
	res = &UIResult{Benchmark: "ui", Environment: environment()}
	if res.Postgres, err = postgres(ctx, tb.node.Pool, tb.node.PostgresSource()); err != nil {
		return nil, err
	}
	id := "bench-ui-" + randomHex(4)
	cfg.Logger.Info("recording the session", "chunks", cfg.Chunks, "steps", cfg.Steps)
	if res.Sent, err = recordUISession(ctx, tb, id, cfg); err != nil {
		return nil, err
	}
	cfg.Logger.Info("timing the first render", "samples", cfg.Samples)
	if res.Page, err = timePage(ctx, tb, id, cfg.Samples); err != nil {
		return nil, err
	}
	if res.Raw, err = timeRawReads(ctx, tb.node.Pool, id, cfg.Samples); err != nil {
		return nil, err
	}
	if res.Raw.P50Ms > 0 {
		res.Ratio = round(res.Page.P50Ms / res.Raw.P50Ms)
	}
	res.Verified = res.Page.Lines == min(uiPageLines, res.Sent.Chunks+res.Sent.Holes) &&
		res.Page.Steps == min(uiPageSteps, res.Sent.Steps)
	return res, nil
}

// The page's first render: its transcript and steps page sizes (server's).
const (
	uiPageLines = 500
	uiPageSteps = 100
)

// recordUISession publishes the session, chunks and command events
// interleaved (one seq in uiHoleEvery skipped), ends it, and waits until
// every projector has it.
func recordUISession(ctx context.Context, tb *testbed, id string, cfg UIConfig) (UISent, error) {
	w := newWorkload("ui", uiPayload, float64(cfg.Steps)/float64(cfg.Chunks+cfg.Steps))
	at := time.Now().UTC()
	envs := []*streams.Envelope{w.start(id, at)}
	var sent UISent
	for seq := int64(1); sent.Chunks < cfg.Chunks || sent.Steps < cfg.Steps; seq++ {
		if seq%uiHoleEvery == 0 {
			sent.Holes++
			continue
		}
		e := w.chunk(id, seq, at)
		if (e.Stream == "event" && sent.Steps == cfg.Steps) || (e.Stream != "event" && sent.Chunks == cfg.Chunks) {
			flipChunk(e) // this kind is all sent: the other is due
		}
		if e.Stream == "event" {
			sent.Steps++
		} else {
			sent.Chunks++
		}
		envs = append(envs, e)
	}
	end := w.end(id, at)
	end.Usage = &streams.Usage{InputTokens: 1200, OutputTokens: 340}
	envs = append(envs, end)
	if _, err := publishAll(ctx, len(envs), func(i int) (jetstream.PubAckFuture, error) {
		return tb.node.Publisher.PublishAsync(envs[i], nil)
	}); err != nil {
		return sent, err
	}
	return sent, tb.node.WaitIdle(ctx, nil)
}

// flipChunk turns a chunk into the other kind (stdout ↔ command event),
// keeping its text.
func flipChunk(e *streams.Envelope) {
	if e.Stream == "event" {
		e.Stream, e.Text, e.Event = "stdout", e.Event.Output, nil
		return
	}
	exit := 0
	e.Stream, e.Event, e.Text = "event", &streams.Event{Action: "command", Command: benchCommand, ExitCode: &exit, Output: e.Text}, ""
}

// timePage fetches the page Samples times (after one warm-up) as the
// session's owner and counts what the last one held.
func timePage(ctx context.Context, tb *testbed, id string, samples int) (UIRender, error) {
	tok, err := tb.node.Signer.Mint(auth.Claims{Org: benchOrg, Member: benchMember}, time.Hour)
	if err != nil {
		return UIRender{}, err
	}
	url := "http://" + tb.node.HTTPAddr() + "/ui/sessions/" + id
	client := &http.Client{Timeout: time.Minute}
	var h histogram
	var page string
	for i := -1; i < samples; i++ {
		began := time.Now()
		if page, err = getPage(ctx, client, url, tok); err != nil {
			return UIRender{}, err
		}
		if i >= 0 {
			h.add(time.Since(began))
		}
	}
	return UIRender{Samples: samples, P50Ms: ms(h.quantile(0.5)), P99Ms: ms(h.quantile(0.99)), MaxMs: ms(h.max),
		Bytes: len(page), Lines: strings.Count(page, "<li class=\"chunk ") + strings.Count(page, "<li class=\"hole\""),
		Steps: strings.Count(page, "<li class=\"step\"")}, nil
}

func getPage(ctx context.Context, client *http.Client, url, token string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, "GET", url, nil)
	if err != nil {
		return "", err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := client.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err == nil && resp.StatusCode != http.StatusOK {
		err = fmt.Errorf("GET %s: %d %.200s", url, resp.StatusCode, body)
	}
	return string(body), err
}

// uiRawReads are the rows the first render shows, read plainly ($1 the
// session id; its run is run-<id>).
var uiRawReads = []string{
	`SELECT * FROM sessions WHERE id = $1`,
	`SELECT * FROM router_calls WHERE session_id = $1`,
	`SELECT seq, stream, text, at FROM session_chunks WHERE session_id = $1 ORDER BY seq LIMIT 500`,
	`SELECT body FROM observations WHERE run_id = 'run-' || $1 AND step_id = '' AND kind = 'note' ORDER BY idx LIMIT 501`,
	`SELECT * FROM steps WHERE run_id = 'run-' || $1 ORDER BY idx LIMIT 101`,
	`SELECT o.* FROM observations o JOIN (SELECT id FROM steps WHERE run_id = 'run-' || $1 ORDER BY idx LIMIT 100) s
		ON o.step_id = s.id WHERE o.run_id = 'run-' || $1`,
	`SELECT * FROM artifacts WHERE session_id = $1 ORDER BY created_at, id LIMIT 101`,
}

// timeRawReads runs uiRawReads Samples times (after one warm-up), every
// row decoded, and counts the chunks and steps the last one read.
func timeRawReads(ctx context.Context, pool *pgxpool.Pool, id string, samples int) (UIRender, error) {
	var h histogram
	counts := make([]int, len(uiRawReads))
	for i := -1; i < samples; i++ {
		began := time.Now()
		for q, sql := range uiRawReads {
			n, err := readAll(ctx, pool, sql, id)
			if err != nil {
				return UIRender{}, err
			}
			counts[q] = n
		}
		if i >= 0 {
			h.add(time.Since(began))
		}
	}
	return UIRender{Samples: samples, P50Ms: ms(h.quantile(0.5)), P99Ms: ms(h.quantile(0.99)), MaxMs: ms(h.max),
		Lines: counts[2], Steps: min(counts[4], uiPageSteps)}, nil
}

func readAll(ctx context.Context, pool *pgxpool.Pool, sql, id string) (int, error) {
	rows, err := pool.Query(ctx, sql, id)
	if err != nil {
		return 0, fmt.Errorf("raw read: %w", err)
	}
	defer rows.Close()
	n := 0
	for rows.Next() {
		if _, err := rows.Values(); err != nil {
			return 0, fmt.Errorf("raw read: %w", err)
		}
		n++
	}
	return n, rows.Err()
}
