package desktop_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spinehq/spine/auth"
	"github.com/spinehq/spine/desktop"
	"github.com/spinehq/spine/internal/spinetest"
	"github.com/spinehq/spine/server"
	"github.com/spinehq/spine/streams"
)

func TestMain(m *testing.M) { spinetest.Main(m) }

// clock is a test clock the service reads; tests move it instead of sleeping.
type clock struct {
	mu  sync.Mutex
	off time.Duration
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Now().Add(c.off)
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.off += d
	c.mu.Unlock()
}

// env is one test's spine: log, database, desktop service and HTTP API.
type env struct {
	t       *testing.T
	h       *spinetest.Harness
	svc     *desktop.Service
	proj    *streams.Projector // the "tasks" projector, beside svc
	signer  *auth.Signer
	clock   *clock
	base    string
	commits chan struct{} // the projector committed a batch
}

func newEnv(t *testing.T) *env {
	t.Helper()
	h := spinetest.New(t)
	signer, err := auth.NewSigner(bytes.Repeat([]byte{42}, 32))
	if err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, h: h, signer: signer, clock: &clock{}, commits: make(chan struct{}, 1)}
	e.svc = e.service()
	e.proj = e.projector(e.svc)
	api := server.New(server.Config{Pool: h.Pool, Signer: signer, Desktop: e.svc, Logger: spinetest.Logger(t)})
	srv := httptest.NewUnstartedServer(api)
	srv.Config.RegisterOnShutdown(e.svc.CloseStreams)
	srv.Start()
	t.Cleanup(srv.Close)
	t.Cleanup(e.svc.CloseStreams)
	e.base = srv.URL
	e.svc.SetBaseURL(srv.URL)
	return e
}

// service starts a desktop service on the env's log and database; a second
// one stands for another spine instance, which runs no projector (the
// first's "tasks" projector applies its writes).
func (e *env) service() *desktop.Service {
	e.t.Helper()
	svc, err := desktop.New(desktop.Config{Pool: e.h.Pool, JS: e.h.JS, NC: e.h.NC, Signer: e.signer, Now: e.clock.Now,
		SweepInterval: -1, Logger: spinetest.Logger(e.t), StreamKeepAlive: 50 * time.Millisecond})
	if err != nil {
		e.t.Fatal(err)
	}
	if err := svc.Start(context.Background()); err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(svc.Stop)
	return svc
}

// projector starts the "tasks" projector as a node does, its commits
// waking svc's writes and signalling e.commits.
func (e *env) projector(svc *desktop.Service) *streams.Projector {
	e.t.Helper()
	p, err := streams.NewProjector(streams.ProjectorConfig{Name: desktop.ProjectorName, Stream: streams.StreamTasks,
		Filter: desktop.Subjects(), Handler: desktop.Projection{}, Pool: e.h.Pool, JS: e.h.JS,
		Logger: spinetest.Logger(e.t), MaxWait: 5 * time.Millisecond, OnCommit: func(last uint64, msgs []streams.Message) {
			svc.Committed(last, msgs)
			select {
			case e.commits <- struct{}{}:
			default:
			}
		}})
	if err != nil {
		e.t.Fatal(err)
	}
	if err := p.Start(context.Background()); err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(p.Stop)
	return p
}

func (e *env) member(org, member string) string {
	tok, err := e.signer.Mint(auth.Claims{Org: org, Member: member}, time.Hour)
	if err != nil {
		e.t.Fatal(err)
	}
	return tok
}

// do sends a request and returns the status and body; a []byte body is
// sent as it is, anything else as JSON.
func (e *env) do(method, path, token string, body any) (int, []byte) {
	e.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case []byte:
		rd = bytes.NewReader(b)
	default:
		data, _ := json.Marshal(b)
		rd = bytes.NewReader(data)
	}
	return spinetest.Do(e.t, method, e.base+path, token, rd)
}

// must sends a request that must answer want.
func (e *env) must(want int, method, path, token string, body any) []byte {
	e.t.Helper()
	code, data := e.do(method, path, token, body)
	if code != want {
		e.t.Fatalf("%s %s = %d %s, want %d", method, path, code, data, want)
	}
	return data
}

func decode[T any](t testing.TB, data []byte) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(data, &v); err != nil {
		t.Fatalf("decode %s: %v", data, err)
	}
	return v
}

// fakeRunner is a desktop runner speaking the protocol over HTTP.
type fakeRunner struct {
	e      *env
	id     string
	token  string
	member string
}

func (e *env) runner(memberTok, runnerID, machine string) *fakeRunner {
	e.t.Helper()
	tok := decode[desktop.RunnerToken](e.t, e.must(201, "POST", "/v1/desktop-runner/tokens", memberTok,
		map[string]string{"runnerId": runnerID}))
	r := &fakeRunner{e: e, id: runnerID, token: tok.Token}
	r.register(machine, []string{desktop.KindRemoteSession})
	return r
}

func (r *fakeRunner) register(machine string, caps []string) {
	r.e.t.Helper()
	r.e.must(200, "POST", "/v1/desktop-runner/register", r.token, desktop.Inventory{Machine: machine,
		Apps: []string{"claude-code"}, Capabilities: caps, ProtocolVersion: 1, ExecutionTargets: []string{"desktop"}})
}

func (r *fakeRunner) work() []desktop.Task {
	r.e.t.Helper()
	return decode[struct{ Tasks []desktop.Task }](r.e.t, r.e.must(200, "GET", "/v1/desktop-runner/work", r.token, nil)).Tasks
}

func (r *fakeRunner) claim(taskID string) desktop.Claim {
	r.e.t.Helper()
	return decode[desktop.Claim](r.e.t, r.e.must(200, "POST", "/v1/desktop-runner/tasks/"+taskID+"/claim", r.token, nil))
}

func (r *fakeRunner) post(taskID, what string, body any) (int, []byte) {
	r.e.t.Helper()
	return r.e.do("POST", "/v1/desktop-runner/tasks/"+taskID+"/"+what, r.token, body)
}

func (r *fakeRunner) heartbeat(taskID string, fence uint64) desktop.Lease {
	r.e.t.Helper()
	code, data := r.post(taskID, "heartbeat", map[string]any{"fence": fence})
	if code != 200 {
		r.e.t.Fatalf("heartbeat = %d %s", code, data)
	}
	return decode[desktop.Lease](r.e.t, data)
}

// sse reads a runner's event stream.
type sse struct {
	resp   *http.Response
	events chan [2]string // event, data
	done   chan struct{}  // the test is over: stop reading
}

func (r *fakeRunner) events(ctx context.Context) *sse {
	r.e.t.Helper()
	req, _ := http.NewRequestWithContext(ctx, "GET", r.e.base+"/v1/desktop-runner/events", nil)
	req.Header.Set("Authorization", "Bearer "+r.token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		r.e.t.Fatal(err)
	}
	if resp.StatusCode != 200 {
		b, _ := io.ReadAll(resp.Body)
		r.e.t.Fatalf("events = %d %s", resp.StatusCode, b)
	}
	s := &sse{resp: resp, events: make(chan [2]string, 64), done: make(chan struct{})}
	go s.read()
	r.e.t.Cleanup(func() {
		close(s.done)
		resp.Body.Close()
	})
	return s
}

func (s *sse) read() {
	defer close(s.events)
	sc := bufio.NewScanner(s.resp.Body)
	var ev string
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			ev = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			s.send(ev, strings.TrimPrefix(line, "data: "))
		case strings.HasPrefix(line, ":"):
			s.send(":", line) // a keepalive
		}
	}
}

func (s *sse) send(event, data string) {
	select {
	case s.events <- [2]string{event, data}:
	case <-s.done:
	}
}

// rest reads the stream to its end and returns the events it carried,
// keepalives left out.
func (s *sse) rest(t testing.TB, within time.Duration) [][2]string {
	t.Helper()
	var out [][2]string
	deadline := time.After(within)
	for {
		select {
		case ev, ok := <-s.events:
			if !ok {
				return out
			}
			if ev[0] != ":" {
				out = append(out, ev)
			}
		case <-deadline:
			t.Fatalf("event stream still open after %s (events so far: %v)", within, out)
		}
	}
}

// next waits for the next event named name (":" for a keepalive).
func (s *sse) next(t testing.TB, name string, within time.Duration) string {
	t.Helper()
	deadline := time.After(within)
	for {
		select {
		case ev, ok := <-s.events:
			if !ok {
				t.Fatalf("event stream ended before %s", name)
			}
			if ev[0] == name {
				return ev[1]
			}
		case <-deadline:
			t.Fatalf("no %s event within %s", name, within)
		}
	}
}

func (e *env) create(memberTok string, req map[string]any) desktop.Session {
	e.t.Helper()
	return decode[desktop.Session](e.t, e.must(201, "POST", "/v1/remote-sessions", memberTok, req))
}

func (e *env) read(memberTok, id, since string) desktop.ReadResult {
	e.t.Helper()
	return decode[desktop.ReadResult](e.t, e.must(200, "GET", fmt.Sprintf("/v1/remote-sessions/%s?since=%s", id, url.QueryEscape(since)), memberTok, nil))
}
