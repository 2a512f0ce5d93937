package bench

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/spinehq/spine/auth"
	"github.com/spinehq/spine/desktop"
)

// Dispatch defaults.
const (
	DefaultDispatchRunners = 4
	DefaultDispatchTasks   = 400
	DefaultDispatchSamples = 200
)

// DispatchConfig configures `spine bench dispatch`.
type DispatchConfig struct {
	Runners     int          // fake runners cycling tasks; 0 means DefaultDispatchRunners
	Tasks       int          // tasks cycled claim → complete; 0 means DefaultDispatchTasks
	Samples     int          // creates timed until the runner is notified; 0 means DefaultDispatchSamples
	DatabaseURL string       // as Config.DatabaseURL
	Logger      *slog.Logger // nil discards progress
}

// DispatchResult is what `spine bench dispatch` prints.
type DispatchResult struct {
	Benchmark   string         `json:"benchmark"` // "dispatch"
	Environment Environment    `json:"environment"`
	Postgres    Postgres       `json:"postgres"`
	Runners     int            `json:"runners"`
	Notify      DispatchNotify `json:"notify"`
	Cycles      DispatchCycles `json:"cycles"`
	Raw         DispatchCycles `json:"raw"`
	// Ratio is spine's cycles/s over the raw baseline's.
	Ratio float64 `json:"ratio"`
}

// DispatchNotify is create → runner notified over SSE, one create at a time.
type DispatchNotify struct {
	Samples int     `json:"samples"`
	P50Ms   float64 `json:"p50Ms"`
	P99Ms   float64 `json:"p99Ms"`
	MaxMs   float64 `json:"maxMs"`
}

// DispatchCycles is claim → heartbeat → events → complete over HTTP, each
// runner cycling its own tasks (raw: the same four writes as JetStream
// publishes with the per-task expected sequence, no projection, no HTTP).
type DispatchCycles struct {
	Tasks     int     `json:"tasks"`
	Seconds   float64 `json:"seconds"`
	PerSecond float64 `json:"perSecond"`
	P50Ms     float64 `json:"cycleP50Ms"`
	P99Ms     float64 `json:"cycleP99Ms"`
}

func (c DispatchConfig) withDefaults() (DispatchConfig, error) {
	c.Runners = cmp.Or(c.Runners, DefaultDispatchRunners)
	c.Tasks = cmp.Or(c.Tasks, DefaultDispatchTasks)
	c.Samples = cmp.Or(c.Samples, DefaultDispatchSamples)
	if c.Logger == nil {
		c.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if c.Runners < 1 || c.Tasks < c.Runners || c.Samples < 1 {
		return c, fmt.Errorf("%w: runners ≥ 1, tasks ≥ runners, samples ≥ 1", ErrInvalidConfig)
	}
	return c, nil
}

// RunDispatch measures desktop dispatch on a fresh node over real HTTP.
func RunDispatch(ctx context.Context, cfg DispatchConfig) (res *DispatchResult, err error) {
	if cfg, err = cfg.withDefaults(); err != nil {
		return nil, err
	}
	tb, err := startTestbed(ctx, Config{DatabaseURL: cfg.DatabaseURL, Logger: cfg.Logger})
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, tb.close()) }()
	d := &dispatchBed{tb: tb, base: "http://" + tb.node.HTTPAddr(), client: &http.Client{Timeout: time.Minute}}
	res = &DispatchResult{Benchmark: "dispatch", Environment: environment(), Runners: cfg.Runners}
	if res.Postgres, err = postgres(ctx, tb.node.Pool, tb.node.PostgresSource()); err != nil {
		return nil, err
	}
	if err := d.setup(cfg.Runners); err != nil {
		return nil, err
	}
	cfg.Logger.Info("notify latency", "samples", cfg.Samples)
	if res.Notify, err = d.notify(ctx, cfg.Samples); err != nil {
		return nil, err
	}
	cfg.Logger.Info("claim → complete cycles", "tasks", cfg.Tasks, "runners", cfg.Runners)
	if res.Cycles, err = d.cycles(cfg.Tasks); err != nil {
		return nil, err
	}
	if res.Raw, err = rawCycles(ctx, tb.node.JS, cfg.Tasks, cfg.Runners); err != nil {
		return nil, err
	}
	if res.Raw.PerSecond > 0 {
		res.Ratio = round(res.Cycles.PerSecond / res.Raw.PerSecond)
	}
	return res, nil
}

type dispatchBed struct {
	tb      *testbed
	base    string
	client  *http.Client
	member  string
	runners []benchRunner
}

type benchRunner struct{ id, token string }

func (d *dispatchBed) setup(n int) error {
	var err error
	if d.member, err = d.tb.node.Signer.Mint(auth.Claims{Org: "bench", Member: "bench"}, time.Hour); err != nil {
		return err
	}
	for i := range n {
		var tok desktop.RunnerToken
		id := fmt.Sprintf("bench-runner-%d", i)
		if err := d.call("POST", "/v1/desktop-runner/tokens", d.member, map[string]string{"runnerId": id}, &tok); err != nil {
			return err
		}
		inv := desktop.Inventory{Machine: id, Capabilities: []string{desktop.KindRemoteSession}, ProtocolVersion: 1}
		if err := d.call("POST", "/v1/desktop-runner/register", tok.Token, inv, nil); err != nil {
			return err
		}
		d.runners = append(d.runners, benchRunner{id: id, token: tok.Token})
	}
	return nil
}

// call sends a JSON request and decodes a 2xx answer into out.
func (d *dispatchBed) call(method, path, token string, body, out any) error {
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, d.base+path, rd)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := d.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("%s %s = %d %s", method, path, resp.StatusCode, data)
	}
	if out != nil {
		return json.Unmarshal(data, out)
	}
	return nil
}

// notify times create → work_available on the first runner's event stream.
func (d *dispatchBed) notify(ctx context.Context, samples int) (DispatchNotify, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	r := d.runners[0]
	req, _ := http.NewRequestWithContext(ctx, "GET", d.base+"/v1/desktop-runner/events", nil)
	req.Header.Set("Authorization", "Bearer "+r.token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return DispatchNotify{}, err
	}
	defer resp.Body.Close()
	events := make(chan string, 16)
	go readEvents(resp.Body, events)
	if _, err := nextEvent(events, "ready"); err != nil {
		return DispatchNotify{}, err
	}
	lat := make([]time.Duration, 0, samples)
	for i := range samples {
		start := time.Now()
		err := d.call("POST", "/v1/remote-sessions", d.member, map[string]any{"target": "desktop", "runnerId": r.id,
			"instructions": fmt.Sprint("notify ", i)}, nil)
		if err != nil {
			return DispatchNotify{}, err
		}
		if _, err := nextEvent(events, "work_available"); err != nil {
			return DispatchNotify{}, err
		}
		lat = append(lat, time.Since(start))
	}
	slices.Sort(lat)
	return DispatchNotify{Samples: samples, P50Ms: ms(percentile(lat, 0.50)), P99Ms: ms(percentile(lat, 0.99)), MaxMs: ms(lat[len(lat)-1])}, nil
}

func readEvents(body io.Reader, out chan<- string) {
	defer close(out)
	sc := bufio.NewScanner(body)
	for sc.Scan() {
		if ev, ok := strings.CutPrefix(sc.Text(), "event: "); ok {
			out <- ev
		}
	}
}

func nextEvent(events <-chan string, name string) (string, error) {
	timeout := time.After(30 * time.Second)
	for {
		select {
		case ev, ok := <-events:
			if !ok {
				return "", errors.New("event stream ended")
			}
			if ev == name {
				return ev, nil
			}
		case <-timeout:
			return "", fmt.Errorf("no %s event in 30s", name)
		}
	}
}

// cycles queues tasks for each runner, then every runner cycles its own:
// claim, heartbeat, one event, complete.
func (d *dispatchBed) cycles(tasks int) (DispatchCycles, error) {
	work := make([][]string, len(d.runners))
	for i := range tasks {
		r := d.runners[i%len(d.runners)]
		var s desktop.Session
		if err := d.call("POST", "/v1/remote-sessions", d.member, map[string]any{"target": "desktop", "runnerId": r.id,
			"instructions": fmt.Sprint("cycle ", i)}, &s); err != nil {
			return DispatchCycles{}, err
		}
		work[i%len(d.runners)] = append(work[i%len(d.runners)], s.LatestTaskID)
	}
	return timeCycles(tasks, len(d.runners), func(runner, i int) error {
		return d.cycle(d.runners[runner], work[runner][i])
	}, func(runner int) int { return len(work[runner]) })
}

func (d *dispatchBed) cycle(r benchRunner, taskID string) error {
	var c desktop.Claim
	p := "/v1/desktop-runner/tasks/" + taskID + "/"
	if err := d.call("POST", p+"claim", r.token, nil, &c); err != nil {
		return err
	}
	if err := d.call("POST", p+"heartbeat", r.token, map[string]any{"fence": c.Fence}, nil); err != nil {
		return err
	}
	ev := []desktop.RunnerEvent{{Seq: 1, Type: desktop.EventAssistantText, Text: "done"}}
	if err := d.call("POST", p+"events", r.token, map[string]any{"fence": c.Fence, "events": ev}, nil); err != nil {
		return err
	}
	return d.call("POST", p+"complete", r.token, map[string]any{"fence": c.Fence}, nil)
}

// timeCycles runs each runner's cycles on its own goroutine and times them.
func timeCycles(tasks, runners int, cycle func(runner, i int) error, count func(runner int) int) (DispatchCycles, error) {
	var mu sync.Mutex
	var lat []time.Duration
	var firstErr error
	var wg sync.WaitGroup
	start := time.Now()
	for r := range runners {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range count(r) {
				t := time.Now()
				err := cycle(r, i)
				mu.Lock()
				lat = append(lat, time.Since(t))
				if err != nil && firstErr == nil {
					firstErr = err
				}
				mu.Unlock()
				if err != nil {
					return
				}
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	if firstErr != nil {
		return DispatchCycles{}, firstErr
	}
	slices.Sort(lat)
	return DispatchCycles{Tasks: tasks, Seconds: round(elapsed.Seconds()), PerSecond: round(float64(tasks) / elapsed.Seconds()),
		P50Ms: ms(percentile(lat, 0.5)), P99Ms: ms(percentile(lat, 0.99))}, nil
}

// rawCycles is the baseline: per task, the four writes of a cycle published
// straight to JetStream, each expecting the task's previous sequence, on a
// stream of its own configured like SPINE_TASKS (file storage, duplicate
// window) so no projector sees them.
func rawCycles(ctx context.Context, js jetstream.JetStream, tasks, runners int) (DispatchCycles, error) {
	_, err := js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{Name: "BENCH_DISPATCH_RAW", Subjects: []string{"bench.dispatch.>"},
		Storage: jetstream.FileStorage, Duplicates: 10 * time.Minute})
	if err != nil {
		return DispatchCycles{}, fmt.Errorf("raw stream: %w", err)
	}
	per := func(r int) int { return tasks/runners + btoi(r < tasks%runners) }
	return timeCycles(tasks, runners, func(r, i int) error {
		subject := fmt.Sprintf("bench.dispatch.raw-%d-%d.", r, i)
		var last uint64
		for _, step := range []string{"claimed", "heartbeat", "events", "completed"} {
			msg := nats.NewMsg(subject + step)
			msg.Data = []byte(`{}`)
			ack, err := js.PublishMsg(ctx, msg, jetstream.WithExpectLastSequenceForSubject(last, subject+">"))
			if err != nil {
				return fmt.Errorf("raw publish: %w", err)
			}
			last = ack.Sequence
		}
		return nil
	}, per)
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
