package bench

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spinehq/spine/auth"
	"github.com/spinehq/spine/streams"
)

// Fairness defaults.
const (
	DefaultFairnessBurst  = 64 << 20
	DefaultFairnessChunk  = 256 << 10
	DefaultFairnessChunks = 16
	DefaultFairnessSend   = 4
)

// FairnessConfig configures `spine bench fairness`: org A posts a burst of
// sessions through HTTP ingest; once half of it is accepted, org B posts
// one small session, and the run measures how long B's session takes to
// be readable. It runs twice, quotas off and quotas on, each on a fresh
// node and database.
type FairnessConfig struct {
	// BurstBytes is A's burst; 0 means DefaultFairnessBurst.
	BurstBytes int64
	// ChunkBytes is the text of each of A's chunks; 0 means 256 KiB.
	ChunkBytes int
	// SessionChunks is the chunks of each of A's sessions, posted as one
	// request; 0 means 16.
	SessionChunks int
	// Senders is how many clients post A's sessions at once; 0 means 4.
	Senders int
	// OrgBytesPerSec and OrgEnvelopesPerSec are the quotas of the run with
	// quotas on; 0 means spine's defaults.
	OrgBytesPerSec     float64
	OrgEnvelopesPerSec float64
	DatabaseURL        string       // as Config.DatabaseURL
	Logger             *slog.Logger // nil discards progress
}

// FairnessResult is what `spine bench fairness` prints.
type FairnessResult struct {
	Benchmark   string      `json:"benchmark"` // "fairness"
	Environment Environment `json:"environment"`
	BurstBytes  int64       `json:"burstBytes"`
	Off         FairnessRun `json:"quotasOff"`
	On          FairnessRun `json:"quotasOn"`
	// Ratio is B's wait with quotas off over its wait with quotas on.
	Ratio   float64 `json:"ratio"`
	Seconds float64 `json:"seconds"`
}

// FairnessRun is one run of the burst and the small session.
type FairnessRun struct {
	OrgBytesPerSec     float64 `json:"orgBytesPerSec"` // 0: no quota
	OrgEnvelopesPerSec float64 `json:"orgEnvelopesPerSec"`
	// AAcceptedBeforeB is how much of A's burst spine had accepted when
	// B's session was accepted: at most that much of A is ahead of B.
	AAcceptedBeforeB int64 `json:"aAcceptedBeforeBBytes"`
	// BWaitSeconds is from B's session accepted (207) to readable whole
	// (GET /v1/sessions/{id} shows it ended).
	BWaitSeconds float64 `json:"bWaitSeconds"`
	// AAcceptedWhenBReadable is how much of A's burst spine had accepted
	// when B's session was readable: below the burst, B did not wait for
	// the whole of A.
	AAcceptedWhenBReadable int64 `json:"aAcceptedWhenBReadableBytes"`
	// AAccepted is the whole of A's burst as accepted.
	AAccepted int64 `json:"aAcceptedBytes"`
	// ASendSeconds is from A's first post to its last one accepted.
	ASendSeconds float64        `json:"aSendSeconds"`
	ARetried     int64          `json:"aRetried429"`
	AStatuses    map[string]int `json:"aStatuses"`
}

func (c FairnessConfig) withDefaults() FairnessConfig {
	c.BurstBytes = cmp.Or(c.BurstBytes, DefaultFairnessBurst)
	c.ChunkBytes = cmp.Or(c.ChunkBytes, DefaultFairnessChunk)
	c.SessionChunks = cmp.Or(c.SessionChunks, DefaultFairnessChunks)
	c.Senders = cmp.Or(c.Senders, DefaultFairnessSend)
	if c.Logger == nil {
		c.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return c
}

// Fairness runs the burst with quotas off, then on.
func Fairness(ctx context.Context, cfg FairnessConfig) (*FairnessResult, error) {
	began := time.Now()
	cfg = cfg.withDefaults()
	res := &FairnessResult{Benchmark: "fairness", Environment: environment(), BurstBytes: cfg.BurstBytes}
	var err error
	cfg.Logger.Info("quotas off")
	if res.Off, err = fairnessRun(ctx, cfg, -1, -1); err != nil {
		return nil, err
	}
	cfg.Logger.Info("quotas on", "b_wait_off_seconds", res.Off.BWaitSeconds)
	if res.On, err = fairnessRun(ctx, cfg, cfg.OrgBytesPerSec, cfg.OrgEnvelopesPerSec); err != nil {
		return nil, err
	}
	if res.On.BWaitSeconds > 0 {
		res.Ratio = round(res.Off.BWaitSeconds / res.On.BWaitSeconds)
	}
	res.Seconds = round(time.Since(began).Seconds())
	return res, nil
}

// fairnessRun measures one run on a fresh node with the given quotas
// (negative: off).
func fairnessRun(ctx context.Context, cfg FairnessConfig, bytesPerSec, envsPerSec float64) (run FairnessRun, err error) {
	tb, err := startTestbed(ctx, Config{DatabaseURL: cfg.DatabaseURL, Logger: cfg.Logger, Instances: 1,
		OrgBytesPerSec: bytesPerSec, OrgEnvelopesPerSec: envsPerSec})
	if err != nil {
		return run, err
	}
	defer func() { err = errors.Join(err, tb.close()) }()
	lim := tb.node.Limits()
	run.OrgBytesPerSec, run.OrgEnvelopesPerSec = max(lim.OrgBytesPerSec, 0), max(lim.OrgEnvelopesPerSec, 0)
	base := "http://" + tb.node.HTTPAddr()
	a, b, err := fairnessPosters(tb, base)
	if err != nil {
		return run, err
	}
	burst := newFairnessBurst(cfg, randomHex(4))
	half := make(chan int64, 1)
	began := time.Now()
	sendErr := make(chan error, 1)
	go func() { sendErr <- burst.send(ctx, a, cfg.Senders, cfg.BurstBytes/2, half) }()
	select {
	case run.AAcceptedBeforeB = <-half:
	case err := <-sendErr:
		return run, fmt.Errorf("org A's burst ended before half was accepted: %v", err)
	}
	wait, err := smallSession(ctx, b, "fair-b-"+randomHex(4))
	run.BWaitSeconds = round(wait.Seconds())
	run.AAcceptedWhenBReadable = burst.accepted.Load()
	if err = errors.Join(err, <-sendErr); err != nil {
		return run, err
	}
	run.ASendSeconds = round(time.Since(began).Seconds())
	run.AAccepted = burst.accepted.Load()
	run.ARetried, run.AStatuses = a.refused.Load(), a.statuses.snapshot()
	return run, nil
}

func fairnessPosters(tb *testbed, base string) (a, b *poster, err error) {
	ta, err := tb.node.Signer.Mint(auth.Claims{Org: "org-a", Member: "m"}, time.Hour)
	if err != nil {
		return nil, nil, err
	}
	tbk, err := tb.node.Signer.Mint(auth.Claims{Org: "org-b", Member: "m"}, time.Hour)
	if err != nil {
		return nil, nil, err
	}
	return newPoster(base, ta), newPoster(base, tbk), nil
}

// fairnessBurst is org A's sessions, each built when it is sent.
type fairnessBurst struct {
	run      string
	chunks   int
	text     string
	sessions int
	accepted atomic.Int64
}

func newFairnessBurst(cfg FairnessConfig, run string) *fairnessBurst {
	per := int64(cfg.ChunkBytes) * int64(cfg.SessionChunks)
	return &fairnessBurst{run: run, chunks: cfg.SessionChunks, sessions: int(max(cfg.BurstBytes/per, 1)),
		text: randomText(rand.New(rand.NewPCG(3, 4)), cfg.ChunkBytes)}
}

// send posts every session with senders clients, and reports on half the
// bytes accepted once at least halfBytes are.
func (f *fairnessBurst) send(ctx context.Context, p *poster, senders int, halfBytes int64, half chan<- int64) error {
	next := make(chan int)
	go func() {
		defer close(next)
		for i := range f.sessions {
			next <- i
		}
	}()
	var once sync.Once
	errs := make(chan error, senders)
	for range senders {
		go func() {
			var err error
			for i := range next {
				if err == nil {
					err = f.post(ctx, p, i, halfBytes, func(n int64) { once.Do(func() { half <- n }) })
				}
			}
			errs <- err
		}()
	}
	var err error
	for range senders {
		err = errors.Join(err, <-errs)
	}
	return err
}

func (f *fairnessBurst) post(ctx context.Context, p *poster, i int, halfBytes int64, reached func(int64)) error {
	body, err := f.session(i)
	if err != nil {
		return err
	}
	status, err := p.post(ctx, "/v1/ingest", body)
	if err != nil {
		return err
	}
	if status != http.StatusMultiStatus {
		return fmt.Errorf("org A's session %d: status %d", i, status)
	}
	if n := f.accepted.Add(int64(len(body))); n >= halfBytes {
		reached(n)
	}
	return nil
}

// session is A's session i as one ingest body.
func (f *fairnessBurst) session(i int) ([]byte, error) {
	id := fmt.Sprintf("fair-a-%s-%04d", f.run, i)
	envs := sessionEnvelopes(id, f.chunks, f.text)
	return json.Marshal(envs)
}

// sessionEnvelopes is a whole session: start, chunks of text, end. Starts
// carry no owner: spine makes the token's member the owner.
func sessionEnvelopes(id string, chunks int, text string) []*streams.Envelope {
	at := time.Now().UTC()
	code := 0
	envs := []*streams.Envelope{{V: 1, Type: streams.TypeSessionStart, ID: id + "-start", At: at, SessionID: id,
		App: benchApp, Kind: "run", WorkerID: "w1"}}
	for seq := 1; seq <= chunks; seq++ {
		envs = append(envs, &streams.Envelope{V: 1, Type: streams.TypeSessionChunk, ID: fmt.Sprintf("%s-c%d", id, seq),
			At: at, SessionID: id, Seq: int64(seq), Stream: "stdout", Text: text})
	}
	return append(envs, &streams.Envelope{V: 1, Type: streams.TypeSessionEnd, ID: id + "-end", At: at,
		SessionID: id, Status: "done", ExitCode: &code, Door: "session"})
}

// smallSession posts B's session and waits until it reads back ended; it
// returns the time from accepted to readable.
func smallSession(ctx context.Context, p *poster, id string) (time.Duration, error) {
	body, err := json.Marshal(sessionEnvelopes(id, 3, "a small session of another org"))
	if err != nil {
		return 0, err
	}
	if status, err := p.post(ctx, "/v1/ingest", body); err != nil || status != http.StatusMultiStatus {
		return 0, fmt.Errorf("org B's session: status %d: %v", status, err)
	}
	accepted := time.Now()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		if ended, err := readEnded(ctx, p, id); err != nil || ended {
			return time.Since(accepted), err
		}
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-tick.C:
		}
	}
}

func readEnded(ctx context.Context, p *poster, id string) (bool, error) {
	status, data, err := p.get(ctx, "/v1/sessions/"+id)
	if err != nil || status == http.StatusNotFound {
		return false, err
	}
	var s struct {
		EndedAt *time.Time `json:"endedAt"`
	}
	if status != http.StatusOK || json.Unmarshal(data, &s) != nil {
		return false, fmt.Errorf("read org B's session: status %d", status)
	}
	return s.EndedAt != nil, nil
}
