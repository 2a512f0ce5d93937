package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/spinehq/spine/apps"
	"github.com/spinehq/spine/desktop"
	"github.com/spinehq/spine/internal/apprig"
	"github.com/spinehq/spine/internal/config"
	"github.com/spinehq/spine/internal/fakemodel"
	"github.com/spinehq/spine/internal/spinetest"
	"github.com/spinehq/spine/node"
)

// runnerRig is a spine node, a member's client, a signed-in runner
// machine (its config dir a temporary one) and a Claude Code home against
// a fake model that the runner's tasks run in.
type runnerRig struct {
	t        *testing.T
	n        *node.Node
	caughtUp func()
	srv      *fakemodel.Server
	claude   *apprig.Claude
	member   *client
	token    string // the member's
	out      *spinetest.Buffer
	// app is a script that runs the real Claude Code with the rig's
	// environment only, in the directory it is started in.
	app string
}

func newRunnerRig(t *testing.T) *runnerRig {
	t.Helper()
	n, caughtUp := testNode(t)
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	srv := fakemodel.Start(t)
	c := apprig.NewClaude(t, srv, nil)
	member, err := newClient("", "")
	if err != nil {
		t.Fatal(err)
	}
	r := &runnerRig{t: t, n: n, caughtUp: caughtUp, srv: srv, claude: c, member: member, token: os.Getenv(config.EnvToken),
		out: &spinetest.Buffer{}, app: envScript(t, c.Bin, c.Env())}
	if out, err := capture(t, "runner", "login", "--machine", "laptop"); err != nil {
		t.Fatalf("runner login: %v\n%s", err, out)
	}
	old, oldLive := heartbeatEvery, runnerLive
	heartbeatEvery = 200 * time.Millisecond
	runnerLive = func() bool { return true } // as on a terminal, unless a test says otherwise
	t.Cleanup(func() { heartbeatEvery, runnerLive = old, oldLive })
	return r
}

// envScript runs bin with exactly env, in the directory it is started in.
func envScript(t *testing.T, bin string, env []string) string {
	t.Helper()
	var b strings.Builder
	b.WriteString("#!/bin/bash\nexec env -i")
	for _, kv := range env {
		fmt.Fprintf(&b, " '%s'", kv)
	}
	fmt.Fprintf(&b, " '%s' \"$@\"\n", bin)
	path := filepath.Join(t.TempDir(), "claude")
	if err := os.WriteFile(path, []byte(b.String()), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

// config writes a runner config: Claude Code (the rig's) allowed Bash, in
// the rig's working directory, with more settings set changes.
func (r *runnerRig) config(set func(map[string]any)) string {
	r.t.Helper()
	cfg := map[string]any{"apps": map[string]any{"claude-code": map[string]any{"bin": r.app, "allowedTools": []string{"Bash"}}},
		"workspaces": []string{r.claude.Dir}}
	if set != nil {
		set(cfg)
	}
	data, _ := json.Marshal(cfg)
	path := filepath.Join(r.t.TempDir(), "runner-config.json")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		r.t.Fatal(err)
	}
	return path
}

// start runs spine runner with args beside the test until it ends; the
// runner is stopped (and waited for) when the test ends, or by stop, which
// says whether it stopped within its bound, and how.
func (r *runnerRig) start(args ...string) (stop func(within time.Duration) error) {
	r.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	old := stdout
	stdout = r.out
	done := make(chan error, 1)
	go func() { done <- run(ctx, append([]string{"runner"}, args...)) }()
	var once sync.Once
	var stopErr error
	stop = func(within time.Duration) error {
		once.Do(func() {
			cancel()
			select {
			case stopErr = <-done:
			case <-time.After(within):
				stopErr = fmt.Errorf("spine runner did not stop within %s", within)
			}
		})
		return stopErr
	}
	r.t.Cleanup(func() {
		if err := stop(time.Minute); err != nil {
			r.t.Errorf("spine runner: %v\n%s", err, r.out)
		}
		stdout = old
	})
	r.waitOut("ready at")
	return stop
}

// waitOut waits until the runner has printed want.
func (r *runnerRig) waitOut(want string) {
	r.t.Helper()
	for deadline := time.Now().Add(time.Minute); !strings.Contains(r.out.String(), want); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			r.t.Fatalf("the runner never printed %q:\n%s", want, r.out)
		}
	}
}

// remoteRead is GET /v1/remote-sessions/{id}.
type remoteRead struct {
	Session struct {
		ID             string `json:"sessionId"`
		State          string `json:"state"`
		LocalSessionID string `json:"localSessionId"`
		LatestTaskID   string `json:"latestTaskId"`
		Error          string `json:"error"`
	} `json:"session"`
	Entries []struct {
		TaskID string `json:"taskId"`
		Source string `json:"source"`
		Kind   string `json:"kind"`
		Text   string `json:"text"`
	} `json:"entries"`
	// RecordedSessions are the app sessions the runner recorded, by task.
	RecordedSessions []struct {
		SessionID string `json:"sessionId"`
		TaskID    string `json:"taskId"`
		Status    string `json:"status"`
	} `json:"recordedSessions"`
	Next  string `json:"next"`
	More  bool   `json:"more"`
	Ended bool   `json:"ended"`
}

func (rr *remoteRead) text() string {
	var b strings.Builder
	for _, e := range rr.Entries {
		fmt.Fprintf(&b, "[%s %s] %s\n", e.Source, e.Kind, e.Text)
	}
	return b.String()
}

func (r *runnerRig) create(body map[string]any) string {
	r.t.Helper()
	body["target"] = "desktop"
	data, _ := json.Marshal(body)
	var s struct {
		ID string `json:"sessionId"`
	}
	if err := r.member.do(context.Background(), http.MethodPost, "/v1/remote-sessions", data, &s); err != nil {
		r.t.Fatalf("create remote session: %v", err)
	}
	return s.ID
}

func (r *runnerRig) read(id, since string) remoteRead {
	r.t.Helper()
	var rr remoteRead
	path := fmt.Sprintf("/v1/remote-sessions/%s?since=%s", url.PathEscape(id), url.QueryEscape(since))
	if err := r.member.do(context.Background(), http.MethodGet, path, nil, &rr); err != nil {
		r.t.Fatalf("read remote session %s: %v", id, err)
	}
	return rr
}

// waitState waits until the remote session's latest task is in state and
// a read reaches the end of everything recorded for it.
func (r *runnerRig) waitState(id, state string) remoteRead {
	r.t.Helper()
	return r.waitStateWithin(id, state, 2*time.Minute)
}

// waitStateWithin is waitState with an upper bound of its own.
func (r *runnerRig) waitStateWithin(id, state string, within time.Duration) remoteRead {
	r.t.Helper()
	var rr remoteRead
	for deadline := time.Now().Add(within); ; time.Sleep(50 * time.Millisecond) {
		rr = r.read(id, "")
		if rr.Session.State == state && rr.Ended { // its recorded sessions read to their ends too
			return rr
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("remote session %s is %s (%s), want %s\n%s\nrunner:\n%s", id, rr.Session.State, rr.Session.Error, state,
				rr.text(), r.out)
		}
	}
}

// recorded is the recorded session of spine's own, GET /v1/sessions/{id}.
type recorded struct {
	ID            string `json:"id"`
	Status        string `json:"status"`
	TaskID        string `json:"taskId"`
	AppSessionRef string `json:"appSessionRef"`
	WorkerID      string `json:"workerId"`
}

func (r *runnerRig) recorded(id string) recorded {
	r.t.Helper()
	r.caughtUp()
	var s recorded
	if err := r.member.do(context.Background(), http.MethodGet, "/v1/sessions/"+url.PathEscape(id), nil, &s); err != nil {
		r.t.Fatalf("recorded session %s: %v", id, err)
	}
	return s
}

// mainTurn answers the runner's Claude Code only (its requests carry no
// MCP tool of spine's).
func mainTurn(t fakemodel.Turn) fakemodel.Turn {
	t.Match = func(b []byte) bool { return !bytes.Contains(b, []byte("mcp__spine")) }
	return t
}

// A task created over HTTP: the runner claims it and runs the real Claude
// Code in the allowed workspace; the answer, the local session id and the
// usage read back through remoteSession.read, the recorded session is
// linked to the task and has its router-call row; then a follow-up
// resumes the same local session (the fake model is sent the earlier
// conversation), and the cursor reads only what came after.
func TestRunnerRunsTaskAndFollowUp(t *testing.T) {
	r := newRunnerRig(t)
	r.srv.Anthropic(
		fakemodel.Turn{Blocks: []fakemodel.Block{fakemodel.Text("looking"),
			fakemodel.Tool("Bash", map[string]any{"command": "pwd", "description": "where"})},
			Usage: fakemodel.Usage{Input: 10, Output: 20, CacheRead: 3000}},
		fakemodel.Turn{Blocks: []fakemodel.Block{fakemodel.Text("the answer is 42")},
			Usage: fakemodel.Usage{Input: 4, Output: 7, CacheRead: 3100}},
		fakemodel.Turn{Blocks: []fakemodel.Block{fakemodel.Text("still 42, resumed")},
			Usage: fakemodel.Usage{Input: 5, Output: 6, CacheRead: 3200}},
	)
	// spine takes the session's start only after the app ended (its usage
	// posted) and a read: what the runner posted then is read before the
	// session's link, and must not be the answer the session then gives.
	posted, release := r.holdIngest(`"type":"usage"`)
	r.start("--config", r.config(nil))
	id := r.create(map[string]any{"instructions": "what is the answer?"})
	select {
	case <-posted:
	case <-time.After(2 * time.Minute):
		t.Fatalf("the runner never posted its usage:\n%s", r.out)
	}
	early := r.read(id, "")
	release()
	rr := r.waitState(id, "done")
	if !strings.Contains(rr.text(), "the answer is 42") || rr.Session.LocalSessionID == "" {
		t.Fatalf("remote session read: local session %q\n%s", rr.Session.LocalSessionID, rr.text())
	}
	// The answer is read once: from the start, and read on from the early
	// read's cursor (the session's stdout; the runner posts no prose).
	later := r.readEnded(id, early.Next)
	if n, m := strings.Count(rr.text(), "the answer is 42"), strings.Count(early.text()+later.text(), "the answer is 42"); n != 1 || m != 1 {
		t.Fatalf("the answer read %d times from the start, %d times across two reads:\n%s--\n%s", n, m, early.text(), later.text())
	}
	if !strings.Contains(r.out.String(), "the answer is 42") || !strings.Contains(r.out.String(), "$ pwd") {
		t.Fatalf("the runner's terminal showed:\n%s", r.out)
	}
	local, task := rr.Session.LocalSessionID, rr.Session.LatestTaskID
	// The events the runner posted, in order: the local session id, the
	// action, the usage, the terminal state (the prose is the session's).
	want := []string{"session_id", "status $ pwd", "usage", "terminal done"}
	if got := r.taskEvents(task); !slices.Equal(got, want) {
		t.Fatalf("the runner posted %q, want %q", got, want)
	}
	rec := r.recorded(apps.SessionID("claude-code", local))
	if rec.TaskID != task || rec.Status != "done" || rec.AppSessionRef != local {
		t.Fatalf("recorded session %+v, want task %s, done, app session %s", rec, task, local)
	}
	if strings.Contains(r.out.String(), "not fully recorded") {
		t.Fatalf("the runner did not record the whole session:\n%s", r.out)
	}
	row := routerCall(t, r.n, rec.ID)
	if row.status != "done" || row.tokens.Output != 27 {
		t.Fatalf("router call %+v, want done with the 27 output tokens served", row)
	}

	cursor := rr.Next
	if again := r.read(id, cursor); len(again.Entries) != 0 {
		t.Fatalf("read after the cursor before anything new: %s", again.text())
	}
	var sent struct {
		MessageID string `json:"messageId"`
	}
	body, _ := json.Marshal(map[string]string{"prompt": "and again?"})
	if err := r.member.do(context.Background(), http.MethodPost, "/v1/remote-sessions/"+id+"/messages", body, &sent); err != nil {
		t.Fatal(err)
	}
	followUp := r.waitTask(id, task, "done").Session.LatestTaskID
	rr = r.readEnded(id, cursor)
	if !strings.Contains(rr.text(), "still 42, resumed") || strings.Contains(rr.text(), "the answer is 42") {
		t.Fatalf("read after the cursor:\n%s", rr.text())
	}
	if rr.Session.LocalSessionID != local {
		t.Fatalf("the follow-up ran in local session %s, want %s", rr.Session.LocalSessionID, local)
	}
	// The continuation is a spine session of its own, for the follow-up's
	// task, with the same app session and its own router-call row.
	if n := len(rr.RecordedSessions); n != 2 || rr.RecordedSessions[1].TaskID != followUp ||
		rr.RecordedSessions[1].SessionID == rec.ID {
		t.Fatalf("recorded sessions %+v, want the first and a continuation for task %s", rr.RecordedSessions, followUp)
	}
	cont := r.recorded(rr.RecordedSessions[1].SessionID)
	if cont.TaskID != followUp || cont.AppSessionRef != local || cont.Status != "done" {
		t.Fatalf("the continuation %+v, want task %s, app session %s, done", cont, followUp, local)
	}
	if row := routerCall(t, r.n, cont.ID); row.tokens.Output != 6 {
		t.Fatalf("the continuation's router call %+v, want the 6 output tokens served", row)
	}
	log := r.srv.Scripted()
	if len(log) != 3 || !bytes.Contains(log[2].Request, []byte("the answer is 42")) ||
		!bytes.Contains(log[2].Request, []byte("and again?")) {
		t.Fatalf("the follow-up's request to the model is not the resumed conversation: %d served", len(log))
	}
}

// holdIngest puts a proxy between the runner and spine (the runner logs in
// again with its URL) that keeps the runner's POST /v1/ingest until release
// is called, and closes posted once a post of the runner's task events
// holding want was answered.
func (r *runnerRig) holdIngest(want string) (posted chan struct{}, release func()) {
	r.t.Helper()
	target, _ := url.Parse(r.member.base)
	proxy := httputil.NewSingleHostReverseProxy(target)
	proxy.FlushInterval = -1 // the event stream
	posted, held := make(chan struct{}), make(chan struct{})
	var seen, freed sync.Once
	release = func() { freed.Do(func() { close(held) }) }
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		switch {
		case req.URL.Path == "/v1/ingest":
			select {
			case <-held:
			case <-req.Context().Done():
				return
			}
		case req.Method == http.MethodPost && strings.HasSuffix(req.URL.Path, "/events"):
			body, _ := io.ReadAll(req.Body)
			req.Body = io.NopCloser(bytes.NewReader(body))
			proxy.ServeHTTP(w, req)
			if bytes.Contains(body, []byte(want)) {
				seen.Do(func() { close(posted) })
			}
			return
		}
		proxy.ServeHTTP(w, req)
	}))
	r.t.Cleanup(front.Close)
	r.t.Cleanup(release) // before front.Close: a held ingest ends
	if out, err := capture(r.t, "runner", "login", "--url", front.URL, "--machine", "laptop"); err != nil {
		r.t.Fatalf("runner login: %v\n%s", err, out)
	}
	return posted, release
}

// taskEvents are the kinds of the events the runner posted for a task, in
// their order (a status with its text, the terminal with its state), as
// spine keeps them.
func (r *runnerRig) taskEvents(task string) []string {
	r.t.Helper()
	r.caughtUp()
	rows, err := r.n.Pool.Query(context.Background(), `SELECT kind, COALESCE(text, ''), COALESCE(data->>'status', '')
		FROM desktop_task_events WHERE task_id = $1 AND seq > 0 ORDER BY seq`, task)
	if err != nil {
		r.t.Fatal(err)
	}
	defer rows.Close()
	var kinds []string
	for rows.Next() {
		var kind, text, status string
		if err := rows.Scan(&kind, &text, &status); err != nil {
			r.t.Fatal(err)
		}
		switch kind {
		case "status":
			kind += " " + text
		case "terminal":
			kind += " " + status
		}
		kinds = append(kinds, kind)
	}
	if err := rows.Err(); err != nil {
		r.t.Fatal(err)
	}
	return kinds
}

// readEnded reads after since until the read says the session ended
// (every recorded session read to its end).
func (r *runnerRig) readEnded(id, since string) remoteRead {
	r.t.Helper()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(50 * time.Millisecond) {
		rr := r.read(id, since)
		if rr.Ended {
			return rr
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("remote session %s never read to its end:\n%s", id, rr.text())
		}
	}
}

// waitTask waits until the remote session's latest task is another than
// previous and in state.
func (r *runnerRig) waitTask(id, previous, state string) remoteRead {
	r.t.Helper()
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(50 * time.Millisecond) {
		rr := r.read(id, "")
		if rr.Session.LatestTaskID != previous && rr.Session.State == state && rr.Ended {
			return rr
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("remote session %s: task %s is %s, want a new one %s\n%s", id, rr.Session.LatestTaskID, rr.Session.State,
				state, r.out)
		}
	}
}

// A cancel while the app works (a Bash call that waits) stops the app:
// the task ends cancelled well before the call would have ended, and so
// does the recorded session.
func TestRunnerCancelStopsTheApp(t *testing.T) {
	r := newRunnerRig(t)
	sleep := uniqueSleep(121)
	r.srv.Anthropic(fakemodel.Turn{Blocks: []fakemodel.Block{fakemodel.Text("waiting"),
		fakemodel.Tool("Bash", map[string]any{"command": sleep, "description": "wait"})}})
	r.start("--config", r.config(nil))
	id := r.create(map[string]any{"instructions": "wait a long time"})
	for deadline := time.Now().Add(time.Minute); len(r.srv.Scripted()) == 0; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the app never asked the model\n%s", r.out)
		}
	}
	time.Sleep(300 * time.Millisecond) // the Bash call under way
	if err := r.member.do(context.Background(), http.MethodPost, "/v1/remote-sessions/"+id+"/cancel", []byte(`{}`), &json.RawMessage{}); err != nil {
		t.Fatal(err)
	}
	started := time.Now()
	rr := r.waitState(id, "cancelled")
	if time.Since(started) > 100*time.Second {
		t.Fatalf("the task ended only when the sleep would have")
	}
	if rr.Session.LocalSessionID == "" {
		t.Fatalf("no local session reported:\n%s", rr.text())
	}
	if rec := r.recorded(apps.SessionID("claude-code", rr.Session.LocalSessionID)); rec.Status != "cancelled" {
		t.Fatalf("recorded session %+v, want cancelled", rec)
	}
	if out, _ := exec.Command("pgrep", "-f", sleep).Output(); len(out) > 0 {
		t.Fatalf("the Bash call's %s still runs after the cancel: %s", sleep, out)
	}
}

// A task asking for more than the runner config allows (another
// workspace, an app not allowed) is refused before anything runs, with a
// reason the caller reads.
func TestRunnerRefuses(t *testing.T) {
	r := newRunnerRig(t)
	r.start("--config", r.config(nil))
	other := t.TempDir()
	for _, tc := range []struct {
		body map[string]any
		want string
	}{
		{map[string]any{"instructions": "look elsewhere", "workspace": other}, "is not allowed"},
		{map[string]any{"instructions": "use codex", "app": "codex"}, "does not run codex"},
	} {
		id := r.create(tc.body)
		rr := r.waitState(id, "refused")
		if !strings.Contains(rr.Session.Error+rr.text(), tc.want) {
			t.Fatalf("refused %v: %q\n%s", tc.body, rr.Session.Error, rr.text())
		}
	}
	if n := len(r.srv.Log()); n != 0 {
		t.Fatalf("a refused task asked the model %d times", n)
	}
}

// The proof: a real Claude Code, an MCP client of spine's /mcp
// with the member's token, calls execute_capability remoteSession.create;
// spine runner claims the task and runs a second real Claude Code; the
// answer reads back through remoteSession.read with a working cursor.
func TestRunnerMCPClientToDesktop(t *testing.T) {
	r := newRunnerRig(t)
	viaMCP := func(b []byte) bool { return bytes.Contains(b, []byte("mcp__spine__execute_capability")) }
	r.srv.Anthropic(
		fakemodel.Turn{Match: viaMCP, Blocks: []fakemodel.Block{fakemodel.Tool("mcp__spine__execute_capability", map[string]any{
			"name": "remoteSession.create", "arguments": map[string]any{"target": "desktop", "instructions": "tell me the answer"}})}},
		fakemodel.Turn{Match: viaMCP, Blocks: []fakemodel.Block{fakemodel.Text("handed to your desktop")}},
		mainTurn(fakemodel.Turn{Blocks: []fakemodel.Block{fakemodel.Text("the desktop says 42")}}),
	)
	r.start("--config", r.config(nil))
	mcp := filepath.Join(t.TempDir(), "mcp.json")
	cfg, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{"spine": map[string]any{"type": "http",
		"url": r.member.base + "/mcp", "headers": map[string]string{"Authorization": "Bearer " + r.token}}}})
	if err := os.WriteFile(mcp, cfg, 0o600); err != nil {
		t.Fatal(err)
	}
	client := apprig.NewClaude(t, r.srv, nil)
	cmd := exec.Command(client.Bin, "-p", "ask my desktop", "--output-format", "stream-json", "--verbose",
		"--allowedTools", "mcp__spine", "--mcp-config", mcp, "--strict-mcp-config")
	cmd.Dir, cmd.Env = client.Dir, client.Env()
	out, err := cmd.CombinedOutput()
	if err != nil || !bytes.Contains(out, []byte("handed to your desktop")) {
		t.Fatalf("the MCP client: %v\n%s", err, out)
	}
	var list struct {
		Sessions []struct {
			ID string `json:"sessionId"`
		} `json:"sessions"`
	}
	if err := r.member.do(context.Background(), http.MethodGet, "/v1/remote-sessions?target=desktop", nil, &list); err != nil ||
		len(list.Sessions) != 1 {
		t.Fatalf("remote sessions: %v %+v\n%s", err, list, out)
	}
	id := list.Sessions[0].ID
	rr := r.waitState(id, "done")
	if !strings.Contains(rr.text(), "the desktop says 42") {
		t.Fatalf("remoteSession.read:\n%s", rr.text())
	}
	if more := r.read(id, rr.Next); len(more.Entries) != 0 || !more.Ended {
		t.Fatalf("read after the cursor: %+v", more)
	}
	half := r.read(id, "")
	if len(half.Entries) < 2 {
		t.Fatalf("too few entries to page: %s", half.text())
	}
	var first remoteRead
	if err := r.member.do(context.Background(), http.MethodGet, "/v1/remote-sessions/"+id+"?limit=1", nil, &first); err != nil {
		t.Fatal(err)
	}
	rest := r.read(id, first.Next)
	if len(first.Entries) != 1 || !first.More || len(rest.Entries) != len(half.Entries)-1 {
		t.Fatalf("paging by the cursor: first %d (more %v), rest %d of %d", len(first.Entries), first.More, len(rest.Entries),
			len(half.Entries))
	}
}

// --confirm asks before each task: no refuses it (declined, nothing run),
// yes runs it.
func TestRunnerConfirm(t *testing.T) {
	r := newRunnerRig(t)
	prompt := r.confirmWith(strings.NewReader("n\ny\n"))
	r.srv.Anthropic(fakemodel.Turn{Blocks: []fakemodel.Block{fakemodel.Text("ran after a yes")}})
	r.start("--config", r.config(nil), "--confirm")
	declined := r.create(map[string]any{"instructions": "first: look at the thing\nthen tell me"})
	if rr := r.waitState(declined, "refused"); rr.Session.Error != "declined by the owner" {
		t.Fatalf("declined task: %q", rr.Session.Error)
	}
	if n := len(r.srv.Log()); n != 0 {
		t.Fatalf("a declined task asked the model %d times", n)
	}
	if want := "first: look at the thing\nthen tell me\nRun it with claude-code in "; !strings.Contains(prompt.String(), want) {
		t.Fatalf("the owner was asked:\n%s\nwant the whole instructions, then %q", prompt, want)
	}
	ran := r.create(map[string]any{"instructions": "second"})
	if rr := r.waitState(ran, "done"); !strings.Contains(rr.text(), "ran after a yes") {
		t.Fatalf("confirmed task:\n%s", rr.text())
	}
}

// confirmWith makes answers the owner's answers to --confirm; what the
// runner asks is returned.
func (r *runnerRig) confirmWith(answers io.Reader) *spinetest.Buffer {
	oldA, oldP := runnerAnswers, runnerPrompt
	prompt := &spinetest.Buffer{}
	runnerAnswers, runnerPrompt = answers, prompt
	r.t.Cleanup(func() { runnerAnswers, runnerPrompt = oldA, oldP })
	return prompt
}

// While --confirm waits for the owner the task is held: heartbeated (it
// goes running, so its lease is renewed), and a cancel or the runner
// stopped ends the wait without an answer. Before, nothing heartbeated
// until the app ran (the lease ran out under a slow owner), and the
// question waited for Enter whatever happened.
func TestRunnerConfirmHoldsTheTask(t *testing.T) {
	r := newRunnerRig(t)
	pr, pw, err := os.Pipe() // the owner never answers
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pw.Close(); pr.Close() })
	prompt := r.confirmWith(pr)
	stop := r.start("--config", r.config(nil), "--confirm")
	waitPrompt := func(n int) {
		for deadline := time.Now().Add(time.Minute); strings.Count(prompt.String(), "[y/N]") < n; time.Sleep(20 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("the owner was never asked:\n%s", r.out)
			}
		}
	}
	id := r.create(map[string]any{"instructions": "wait for me"})
	waitPrompt(1)
	for deadline := time.Now().Add(time.Minute); r.read(id, "").Session.State != "running"; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the task is %s while the owner is asked, want running (heartbeated)", r.read(id, "").Session.State)
		}
	}
	if err := r.member.do(context.Background(), http.MethodPost, "/v1/remote-sessions/"+id+"/cancel", []byte(`{}`), &json.RawMessage{}); err != nil {
		t.Fatal(err)
	}
	if rr := r.waitStateWithin(id, "cancelled", 30*time.Second); !strings.Contains(rr.Session.Error, "before it ran") {
		t.Fatalf("the task cancelled while asked: %q", rr.Session.Error)
	}

	other := r.create(map[string]any{"instructions": "wait for me again"})
	waitPrompt(2)
	if err := stop(30 * time.Second); err != nil {
		t.Fatalf("spine runner stopped while asking: %v", err)
	}
	if rr := r.waitStateWithin(other, "cancelled", 30*time.Second); !strings.Contains(rr.Session.Error, "was stopped") {
		t.Fatalf("the task asked about when the runner stopped: %q", rr.Session.Error)
	}
	if n := len(r.srv.Log()); n != 0 {
		t.Fatalf("an unanswered task asked the model %d times", n)
	}
}

// A runner token the member revokes ends the runner's event stream, and
// spine runner stops, saying to log in again.
func TestRunnerRevoked(t *testing.T) {
	r := newRunnerRig(t)
	path, _ := runnerCredsPath()
	creds, err := loadRunnerCreds(path)
	if err != nil {
		t.Fatal(err)
	}
	old := stdout
	stdout = r.out
	t.Cleanup(func() { stdout = old })
	done := make(chan error, 1)
	go func() { done <- run(context.Background(), []string{"runner", "--config", r.config(nil)}) }()
	r.waitOut("ready at")
	if err := r.member.do(context.Background(), http.MethodDelete, "/v1/desktop-runner/tokens/"+creds.TokenID, nil, &json.RawMessage{}); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if !errors.Is(err, errLoginAgain) {
			t.Fatalf("spine runner ended with %v, want to be told to log in again", err)
		}
	case <-time.After(time.Minute):
		t.Fatalf("spine runner went on with a revoked token\n%s", r.out)
	}
}

// A task asking for Codex runs the real Codex (exec --json, the prompt
// after "--", no stdin), and its follow-up resumes the same thread (exec resume):
// the model is sent the earlier turn.
func TestRunnerCodexFollowUp(t *testing.T) {
	r := newRunnerRig(t)
	r.srv.OpenAI(
		fakemodel.Turn{Blocks: []fakemodel.Block{fakemodel.Text("codex says 7")}, Usage: fakemodel.Usage{Input: 100, Output: 5}},
		fakemodel.Turn{Blocks: []fakemodel.Block{fakemodel.Text("codex resumed, still 7")}, Usage: fakemodel.Usage{Input: 120, Output: 6}},
	)
	// The runner's own stdin is a pipe nobody closes: the app must not
	// wait on it (Codex reads a stdin that is not a terminal to its end).
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	oldStdin := os.Stdin
	os.Stdin = pr
	t.Cleanup(func() { os.Stdin = oldStdin; pw.Close(); pr.Close() })
	codex := apprig.NewCodex(t, r.srv, nil)
	cfg := r.config(func(c map[string]any) {
		c["apps"].(map[string]any)["codex"] = map[string]any{"bin": envScript(t, codex.Bin, codex.Env(t)),
			"args": []string{"--skip-git-repo-check", "--dangerously-bypass-approvals-and-sandbox"}}
		c["workspaces"] = []string{codex.Dir}
	})
	r.start("--config", cfg)
	id := r.create(map[string]any{"instructions": "-n count", "app": "codex"})
	rr := r.waitState(id, "done")
	if !strings.Contains(rr.text(), "codex says 7") || rr.Session.LocalSessionID == "" {
		t.Fatalf("codex task: local session %q\n%s\nrunner:\n%s", rr.Session.LocalSessionID, rr.text(), r.out)
	}
	log := r.srv.Scripted()
	if len(log) != 1 || !bytes.Contains(log[0].Request, []byte(`-n count`)) {
		t.Fatalf("the model was not sent the instructions as the prompt: %d served", len(log))
	}
	task := rr.Session.LatestTaskID
	body, _ := json.Marshal(map[string]string{"prompt": "again"})
	if err := r.member.do(context.Background(), http.MethodPost, "/v1/remote-sessions/"+id+"/messages", body, &json.RawMessage{}); err != nil {
		t.Fatal(err)
	}
	rr = r.waitTask(id, task, "done")
	if !strings.Contains(rr.text(), "codex resumed, still 7") {
		t.Fatalf("codex follow-up:\n%s\nrunner:\n%s", rr.text(), r.out)
	}
	log = r.srv.Scripted()
	if len(log) != 2 || !bytes.Contains(log[1].Request, []byte("codex says 7")) {
		t.Fatalf("the follow-up's request is not the resumed thread: %d served", len(log))
	}
}

// With the event stream failing (a proxy in front of spine answers it
// 503), the runner polls its work and still takes a task.
func TestRunnerPollsWithoutStream(t *testing.T) {
	r := newRunnerRig(t)
	target, _ := url.Parse(r.member.base)
	proxy := httputil.NewSingleHostReverseProxy(target)
	var refused atomic.Int64
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.URL.Path == "/v1/desktop-runner/events" {
			refused.Add(1)
			http.Error(w, "no streams here", http.StatusServiceUnavailable)
			return
		}
		proxy.ServeHTTP(w, req)
	}))
	t.Cleanup(front.Close)
	if out, err := capture(t, "runner", "login", "--url", front.URL); err != nil {
		t.Fatalf("runner login: %v\n%s", err, out)
	}
	r.srv.Anthropic(mainTurn(fakemodel.Turn{Blocks: []fakemodel.Block{fakemodel.Text("polled and ran")}}))
	r.start("--config", r.config(nil))
	id := r.create(map[string]any{"instructions": "anything"})
	// Well within the minute the runner lists its work with a stream up.
	if rr := r.waitStateWithin(id, "done", 30*time.Second); !strings.Contains(rr.text(), "polled and ran") || refused.Load() == 0 {
		t.Fatalf("polled task (stream refused %d times):\n%s\nrunner:\n%s", refused.Load(), rr.text(), r.out)
	}
}

// A lease the runner lost (spine's sweeper found it ran out and
// interrupted the task) stops the app at the runner's next heartbeat,
// which answers stale_claim; the task stays interrupted, not completed.
// The sweep is told a time past the lease, so the test need not wait one
// out (it took 66 s that way).
func TestRunnerLostLeaseStopsTheApp(t *testing.T) {
	r := newRunnerRig(t)
	sleep := uniqueSleep(122)
	r.srv.Anthropic(fakemodel.Turn{Blocks: []fakemodel.Block{fakemodel.Text("waiting"),
		fakemodel.Tool("Bash", map[string]any{"command": sleep, "description": "wait"})}})
	r.start("--config", r.config(nil))
	id := r.create(map[string]any{"instructions": "wait past the lease"})
	for deadline := time.Now().Add(time.Minute); len(r.srv.Scripted()) == 0; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the app never asked the model\n%s", r.out)
		}
	}
	// A heartbeat landing during a sweep wins over it: sweep until one lands.
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(50 * time.Millisecond) {
		res, err := r.n.Desktop.Sweep(context.Background(), time.Now().Add(desktop.LeaseTTL+time.Minute))
		if err != nil {
			t.Fatal(err)
		}
		if res.Interrupted == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the sweep never interrupted the task: %+v", res)
		}
	}
	r.waitStateWithin(id, "interrupted", time.Minute)
	r.waitOut("lost the task's lease")
	if out, _ := exec.Command("pgrep", "-f", sleep).Output(); len(out) > 0 {
		t.Fatalf("the Bash call's %s still runs after the lease was lost: %s", sleep, out)
	}
	if strings.Contains(r.out.String(), "receipt") {
		t.Fatalf("the runner completed a task it no longer held:\n%s", r.out)
	}
}

// The runner heartbeats as often as spine's registration answer says, and
// judges its lease by its own clock from the last heartbeat spine took: a
// server clock far behind its own (every leaseExpiresAt in the past) and
// two heartbeats failing do not make it drop a task whose lease spine
// still keeps. A proxy in front of spine rewrites the answers. Before, the
// interval was the built-in 10 s and the first failed heartbeat compared
// the server's leaseExpiresAt with the laptop's clock and stopped the app.
func TestRunnerLeaseFromRegistration(t *testing.T) {
	r := newRunnerRig(t)
	heartbeatEvery = 0 // the registration's
	oldWait := maxTransientWait
	maxTransientWait = 300 * time.Millisecond
	t.Cleanup(func() { maxTransientWait = oldWait })
	target, _ := url.Parse(r.member.base)
	var beats atomic.Int64
	proxy := &httputil.ReverseProxy{Rewrite: func(pr *httputil.ProxyRequest) { pr.SetURL(target) },
		ModifyResponse: func(resp *http.Response) error {
			path := resp.Request.URL.Path
			var edit func(map[string]any)
			switch {
			case path == "/v1/desktop-runner/register":
				edit = func(m map[string]any) { m["heartbeatSeconds"], m["leaseSeconds"] = 1, 30 }
			case strings.HasSuffix(path, "/heartbeat") && resp.StatusCode == http.StatusOK:
				edit = func(m map[string]any) { m["leaseExpiresAt"] = "2000-01-01T00:00:00Z" }
			default:
				return nil
			}
			var m map[string]any
			if err := json.NewDecoder(resp.Body).Decode(&m); err != nil {
				return err
			}
			resp.Body.Close()
			edit(m)
			data, _ := json.Marshal(m)
			resp.Body, resp.ContentLength = io.NopCloser(bytes.NewReader(data)), int64(len(data))
			resp.Header.Del("Content-Length")
			return nil
		}}
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if strings.HasSuffix(req.URL.Path, "/heartbeat") {
			// Requests 2 to 7: the runner's second and third heartbeats, each
			// tried three times within maxTransientWait.
			if n := beats.Add(1); n >= 2 && n <= 7 {
				http.Error(w, `{"error":{"code":"unavailable","message":"not now"}}`, http.StatusServiceUnavailable)
				return
			}
		}
		proxy.ServeHTTP(w, req)
	}))
	t.Cleanup(front.Close)
	if out, err := capture(t, "runner", "login", "--url", front.URL); err != nil {
		t.Fatalf("runner login: %v\n%s", err, out)
	}
	r.srv.Anthropic(
		mainTurn(fakemodel.Turn{Blocks: []fakemodel.Block{fakemodel.Text("waiting a little"),
			fakemodel.Tool("Bash", map[string]any{"command": "sleep 5", "description": "wait"})}}),
		mainTurn(fakemodel.Turn{Blocks: []fakemodel.Block{fakemodel.Text("kept the task")}}),
	)
	r.start("--config", r.config(nil))
	id := r.create(map[string]any{"instructions": "take a few seconds"})
	rr := r.waitStateWithin(id, "done", time.Minute)
	if !strings.Contains(rr.text(), "kept the task") || strings.Contains(r.out.String(), "lost the task's lease") {
		t.Fatalf("the task under a skewed clock and two failed heartbeats:\n%s\nrunner:\n%s", rr.text(), r.out)
	}
	// 5 s of Bash at one heartbeat a second (the failed ones tried three
	// times); at the built-in 10 s, one.
	if n := beats.Load(); n < 8 {
		t.Fatalf("%d heartbeat requests, want one heartbeat a second as the registration said", n)
	}
}

// A heartbeat spine keeps answering 429 (Retry-After 30 s) is not waited
// for past the lease: the runner stops the app once the lease it last had
// has run out (3 s, from the registration), however long the client would
// otherwise wait for a busy spine (15 minutes). Before, the heartbeat call
// waited out each Retry-After and the app ran on unheld.
func TestRunnerBusyHeartbeatKeepsToTheLease(t *testing.T) {
	r := newRunnerRig(t)
	heartbeatEvery = 0 // the registration's
	target, _ := url.Parse(r.member.base)
	var beats atomic.Int64
	proxy := &httputil.ReverseProxy{Rewrite: func(pr *httputil.ProxyRequest) { pr.SetURL(target) },
		ModifyResponse: func(resp *http.Response) error {
			if resp.Request.URL.Path != "/v1/desktop-runner/register" {
				return nil
			}
			var m map[string]any
			if err := json.NewDecoder(resp.Body).Decode(&m); err != nil {
				return err
			}
			resp.Body.Close()
			m["heartbeatSeconds"], m["leaseSeconds"] = 1, 3
			data, _ := json.Marshal(m)
			resp.Body, resp.ContentLength = io.NopCloser(bytes.NewReader(data)), int64(len(data))
			resp.Header.Del("Content-Length")
			return nil
		}}
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if strings.HasSuffix(req.URL.Path, "/heartbeat") && beats.Add(1) > 1 {
			w.Header().Set("Retry-After", "30")
			http.Error(w, `{"error":{"code":"busy","message":"spine is busy"}}`, http.StatusTooManyRequests)
			return
		}
		proxy.ServeHTTP(w, req)
	}))
	t.Cleanup(front.Close)
	if out, err := capture(t, "runner", "login", "--url", front.URL); err != nil {
		t.Fatalf("runner login: %v\n%s", err, out)
	}
	sleep := uniqueSleep(123)
	r.srv.Anthropic(fakemodel.Turn{Blocks: []fakemodel.Block{fakemodel.Text("waiting"),
		fakemodel.Tool("Bash", map[string]any{"command": sleep, "description": "wait"})}})
	r.start("--config", r.config(nil))
	r.create(map[string]any{"instructions": "wait while spine is busy"})
	r.waitOut("lost the task's lease")
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		out, _ := exec.Command("pgrep", "-f", sleep).Output()
		if len(out) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the Bash call's %s still runs after the lease ran out: %s", sleep, out)
		}
	}
}

// An app that fails (exits 3 without a word) ends the task failed, with
// why; one that cannot start at all too.
func TestRunnerAppFails(t *testing.T) {
	r := newRunnerRig(t)
	cfg := r.config(func(c map[string]any) {
		c["apps"] = map[string]any{"claude-code": map[string]any{"bin": script(t, "exit 3")},
			"codex": map[string]any{"bin": filepath.Join(t.TempDir(), "no-such-codex")}}
	})
	r.start("--config", cfg)
	for app, want := range map[string]string{"claude-code": "exit code 3", "codex": "could not start"} {
		id := r.create(map[string]any{"instructions": "fail", "app": app})
		if rr := r.waitState(id, "failed"); !strings.Contains(rr.Session.Error, "app_failed") ||
			!strings.Contains(rr.Session.Error, want) {
			t.Fatalf("%s: failed with %q, want app_failed: …%s", app, rr.Session.Error, want)
		}
	}
}

// uniqueSleep is a sleep of about secs seconds whose command line no other
// test's (another test binary's on the machine too) matches, for pgrep.
func uniqueSleep(secs int) string {
	return fmt.Sprintf("sleep %d.%09d", secs, time.Now().UnixNano()%1e9)
}

// As a service (stdout not a terminal: the journal, a log file) the runner
// prints each task's id, how it ended and its receipt, and never the
// instructions or the app's prose; --confirm, which needs a terminal, is
// refused at start. Before, the journal got the instructions' first line
// and the whole rendering of the run.
func TestRunnerServiceOutput(t *testing.T) {
	r := newRunnerRig(t)
	runnerLive = func() bool { return false }
	if _, err := capture(t, "runner", "--config", r.config(nil), "--confirm", "--once"); err == nil || !strings.Contains(err.Error(), "terminal") {
		t.Fatalf("--confirm as a service: %v, want refused (no terminal)", err)
	}
	r.srv.Anthropic(fakemodel.Turn{Blocks: []fakemodel.Block{fakemodel.Text("the private answer")}})
	r.start("--config", r.config(nil))
	id := r.create(map[string]any{"instructions": "the private question"})
	rr := r.waitState(id, "done")
	out := r.out.String()
	if !strings.Contains(out, "▶ task "+rr.Session.LatestTaskID) || !strings.Contains(out, "■ task "+rr.Session.LatestTaskID+" done (receipt ") {
		t.Fatalf("the service's output lacks the task, its state or its receipt:\n%s", out)
	}
	if strings.Contains(out, "private") {
		t.Fatalf("the service's output holds the prompt or the answer:\n%s", out)
	}
}

// spine runner returning (here: spine refuses the runner's token on the
// work list) closes its event stream too: the stream's goroutine ends with
// serve. Before, serve returned and left it reading the stream.
func TestRunnerStopsItsStream(t *testing.T) {
	r := newRunnerRig(t)
	target, _ := url.Parse(r.member.base)
	proxy := httputil.NewSingleHostReverseProxy(target)
	var streams atomic.Int64
	var refuse atomic.Bool
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		switch {
		case req.URL.Path == "/v1/desktop-runner/events":
			streams.Add(1)
			defer streams.Add(-1)
		case req.URL.Path == "/v1/desktop-runner/work" && refuse.Load():
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = w.Write([]byte(`{"error":{"code":"unauthorized","message":"invalid token"}}`))
			return
		}
		proxy.ServeHTTP(w, req)
	}))
	t.Cleanup(front.Close)
	if out, err := capture(t, "runner", "login", "--url", front.URL); err != nil {
		t.Fatalf("runner login: %v\n%s", err, out)
	}
	old := stdout
	stdout = r.out
	t.Cleanup(func() { stdout = old })
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	done := make(chan error, 1)
	go func() { done <- run(ctx, []string{"runner", "--config", r.config(nil)}) }()
	r.waitOut("ready at")
	for deadline := time.Now().Add(time.Minute); streams.Load() != 1; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the runner never opened its event stream:\n%s", r.out)
		}
	}
	refuse.Store(true)
	r.create(map[string]any{"instructions": "never taken"}) // work_available: the runner lists its work
	select {
	case err := <-done:
		if !errors.Is(err, errLoginAgain) {
			t.Fatalf("spine runner ended with %v, want to be told to log in again", err)
		}
	case <-time.After(time.Minute):
		t.Fatalf("spine runner went on with a refused token\n%s", r.out)
	}
	for deadline := time.Now().Add(10 * time.Second); streams.Load() != 0; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("spine runner returned with its event stream still open")
		}
	}
}

// The event stream going up and then down again while a task runs leaves
// the runner polling at the fast pace: the next task, announced on no
// stream, is taken well within the minute of the slow poll. Before, the
// "up" was kept in a channel of one and the "down" after it dropped, so
// the runner polled once a minute with the stream down.
func TestRunnerStreamDownAfterUp(t *testing.T) {
	old := pollEvery
	pollEvery = 500 * time.Millisecond // the polls this test waits for
	t.Cleanup(func() { pollEvery = old })
	r := newRunnerRig(t)
	target, _ := url.Parse(r.member.base)
	proxy := httputil.NewSingleHostReverseProxy(target)
	// The first stream is held unanswered until the task runs, then
	// answered (its ready event) and ended; every later one is refused.
	var conns, lists atomic.Int64
	release := make(chan struct{})
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.URL.Path == "/v1/desktop-runner/events" {
			if conns.Add(1) > 1 {
				http.Error(w, "no stream now", http.StatusServiceUnavailable)
				return
			}
			select {
			case <-release:
			case <-req.Context().Done():
				return
			}
			w.Header().Set("Content-Type", "text/event-stream")
			_, _ = io.WriteString(w, "event: ready\ndata: {}\n\n")
			return // up, then down
		}
		if req.URL.Path == "/v1/desktop-runner/work" {
			lists.Add(1)
		}
		proxy.ServeHTTP(w, req)
	}))
	t.Cleanup(front.Close)
	if out, err := capture(t, "runner", "login", "--url", front.URL); err != nil {
		t.Fatalf("runner login: %v\n%s", err, out)
	}
	gate := filepath.Join(t.TempDir(), "go on")
	r.srv.Anthropic(
		mainTurn(fakemodel.Turn{Blocks: []fakemodel.Block{fakemodel.Text("waiting for the gate"),
			fakemodel.Tool("Bash", map[string]any{"command": "until [ -e '" + gate + "' ]; do sleep 0.05; done", "description": "wait"})}}),
		mainTurn(fakemodel.Turn{Blocks: []fakemodel.Block{fakemodel.Text("first done")}}),
		mainTurn(fakemodel.Turn{Blocks: []fakemodel.Block{fakemodel.Text("second done")}}),
	)
	r.start("--config", r.config(nil))
	first := r.create(map[string]any{"instructions": "wait for the gate"}) // taken by polling: no stream yet
	for deadline := time.Now().Add(time.Minute); len(r.srv.Scripted()) == 0; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the app never asked the model\n%s", r.out)
		}
	}
	close(release) // the stream, while the task runs: up and down
	for deadline := time.Now().Add(time.Minute); !strings.Contains(r.out.String(), "event stream: spine closed it"); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the runner's stream never went up and down:\n%s", r.out)
		}
	}
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	r.waitStateWithin(first, "done", time.Minute)
	// Two more listings: the poll after the task's end has set the pace.
	for n, deadline := lists.Load(), time.Now().Add(30*time.Second); lists.Load() < n+2; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the runner listed its work %d times in 30 s after the task, with the stream down", lists.Load()-n)
		}
	}
	second := r.create(map[string]any{"instructions": "the next one"})
	if rr := r.waitStateWithin(second, "done", 30*time.Second); !strings.Contains(rr.text(), "second done") {
		t.Fatalf("the second task:\n%s", rr.text())
	}
}

// A runner started while spine does not answer (a proxy in front answers
// its registration 503) waits and registers once spine does, saying so
// once, instead of exiting after the client's retries.
func TestRunnerWaitsForSpine(t *testing.T) {
	r := newRunnerRig(t)
	oldWait, oldBackoff := maxTransientWait, registerBackoff
	maxTransientWait, registerBackoff = 200*time.Millisecond, 200*time.Millisecond
	t.Cleanup(func() { maxTransientWait, registerBackoff = oldWait, oldBackoff })
	target, _ := url.Parse(r.member.base)
	proxy := httputil.NewSingleHostReverseProxy(target)
	var refused atomic.Int64
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.URL.Path == "/v1/desktop-runner/register" && refused.Add(1) <= 12 {
			http.Error(w, "spine is starting", http.StatusServiceUnavailable)
			return
		}
		proxy.ServeHTTP(w, req)
	}))
	t.Cleanup(front.Close)
	if out, err := capture(t, "runner", "login", "--url", front.URL); err != nil {
		t.Fatalf("runner login: %v\n%s", err, out)
	}
	r.start("--config", r.config(nil))
	if n := strings.Count(r.out.String(), "does not answer"); n != 1 || refused.Load() < 12 {
		t.Fatalf("told %d times that spine does not answer (%d refused), want once:\n%s", n, refused.Load(), r.out)
	}
	r.srv.Anthropic(mainTurn(fakemodel.Turn{Blocks: []fakemodel.Block{fakemodel.Text("registered late")}}))
	id := r.create(map[string]any{"instructions": "anything"})
	if rr := r.waitState(id, "done"); !strings.Contains(rr.text(), "registered late") {
		t.Fatalf("the task after a late registration:\n%s", rr.text())
	}
}
