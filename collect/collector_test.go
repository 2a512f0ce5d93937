package collect

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/spinehq/spine/importer"
	"github.com/spinehq/spine/internal/config"
	"github.com/spinehq/spine/internal/pgtest"
	"github.com/spinehq/spine/internal/spinetest"
	"github.com/spinehq/spine/node"
	"github.com/spinehq/spine/streams"
)

// api is spine's HTTP API over a real connection, as importer.HTTPSink
// calls it (the CLI has its own client, with retries, in cmd/spine).
type api struct{ base, token string }

type httpError struct {
	status int
	body   string
}

func (e *httpError) Error() string   { return fmt.Sprintf("%d: %s", e.status, e.body) }
func (e *httpError) HTTPStatus() int { return e.status }

func (a api) Do(ctx context.Context, method, path string, body []byte, out any) error {
	var r io.Reader
	if body != nil {
		r = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, a.base+path, r)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+a.token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if resp.StatusCode >= 300 {
		return &httpError{resp.StatusCode, string(data)}
	}
	if out == nil {
		return nil
	}
	return json.Unmarshal(data, out)
}

func testAPI(t *testing.T) api {
	t.Helper()
	a, _ := testAPINode(t)
	return a
}

func testAPINode(t *testing.T) (api, *node.Node) {
	t.Helper()
	_, url := pgtest.New(t)
	n, err := node.Start(context.Background(), config.Config{DatabaseURL: url, NATSListen: "off", HTTPAddr: "127.0.0.1:0",
		DataDir: t.TempDir(), TokenSecret: strings.Repeat("ab", 32)}, spinetest.Logger(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(n.Stop)
	tok, _ := n.DevToken()
	return api{base: "http://" + n.HTTPAddr(), token: tok}, n
}

// crudTranscript is a real Claude Code transcript from the fixtures.
func crudTranscript(t *testing.T) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "shared", "fixtures", "claude-transcripts", "tomjnsn-agentlogs__claudecode_crud.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// crudPath is where Claude Code keeps crudTranscript's session under home.
func crudPath(home string) string {
	return filepath.Join(home, "projects", "-w", "8122657c-fe54-4dc9-89a3-20049e8a84f7.jsonl")
}

// writeCrud writes crudTranscript whole at crudPath(home) and returns the path.
func writeCrud(t *testing.T, home string) string {
	t.Helper()
	path := crudPath(home)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, crudTranscript(t), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// A collector made anew for every step of a growing transcript (a restart
// each time) sends every envelope once: the sink hears of no duplicate,
// so nothing before a saved offset was sent again.
func TestRestartsSendNothingTwice(t *testing.T) {
	a := testAPI(t)
	home := t.TempDir()
	data := crudTranscript(t)
	path := crudPath(home)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	state := filepath.Join(t.TempDir(), "state.json")
	sent := 0
	for i := 1; i <= 4; i++ {
		if err := os.WriteFile(path, data[:len(data)*i/4], 0o644); err != nil {
			t.Fatal(err)
		}
		c, err := New(Options{ClaudeDir: home, StatePath: state, Machine: "m1", Sink: importer.NewHTTPSink(a, 500)})
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Once(context.Background()); err != nil {
			t.Fatal(err)
		}
		st := c.Stats()
		if st.Duplicates != 0 {
			t.Fatalf("step %d: %d of %d envelopes sent were duplicates", i, st.Duplicates, st.Sent)
		}
		sent += st.Sent
	}
	if sent == 0 {
		t.Fatal("nothing was sent")
	}
}

// Without file notifications the collector still follows a file, by
// polling: lines written while it runs reach spine.
func TestRunPollsWithoutNotifications(t *testing.T) {
	a := testAPI(t)
	home := t.TempDir()
	data := crudTranscript(t)
	c, err := New(Options{ClaudeDir: home, StatePath: filepath.Join(t.TempDir(), "state.json"), Machine: "m1",
		Sink: importer.NewHTTPSink(a, 500), NoNotify: true, Poll: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	path := crudPath(home)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(spinetest.WaitTimeout)
	for {
		var s struct {
			LastSeq int64 `json:"lastSeq"`
		}
		if a.Do(ctx, http.MethodGet, "/v1/sessions/8122657c-fe54-4dc9-89a3-20049e8a84f7", nil, &s) == nil && s.LastSeq > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the file never reached spine by polling")
		}
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// flushFails is a sink whose Flush fails after spine accepted the pass:
// as when the state save fails afterwards, the collector must take it that
// nothing after its saved offsets was recorded.
type flushFails struct{ importer.Sink }

func (f flushFails) Flush(ctx context.Context) (importer.SinkStats, error) {
	st, err := f.Sink.Flush(ctx)
	if err != nil {
		return st, err
	}
	return st, errors.New("state not saved")
}

// caughtUp waits until spine's session reads as far as its log holds, as
// a restart a few seconds later finds it.
func caughtUp(t *testing.T, a api, n *node.Node, session string) {
	t.Helper()
	var last int64
	chunks(t, n, session, func(e streams.Envelope) { last = max(last, e.Seq) })
	deadline := time.Now().Add(spinetest.WaitTimeout)
	for {
		var s struct {
			LastSeq int64 `json:"lastSeq"`
		}
		if a.Do(context.Background(), http.MethodGet, "/v1/sessions/"+session, nil, &s) == nil && s.LastSeq >= last {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("spine's session never read up to seq %d", last)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// chunkTexts counts the chunks spine's session log holds, by text, with
// the start's prompt.
func chunkTexts(t *testing.T, n *node.Node, session string) map[string]int {
	t.Helper()
	out := map[string]int{}
	chunks(t, n, session, func(e streams.Envelope) {
		switch e.Type {
		case streams.TypeSessionChunk:
			out[e.Text]++
		case streams.TypeSessionStart:
			out[e.Prompt]++ // the first prompt is the start's
		}
	})
	return out
}

// chunks calls f with each envelope of a session in spine's log.
func chunks(t *testing.T, n *node.Node, session string, f func(streams.Envelope)) {
	t.Helper()
	ctx := context.Background()
	s, err := n.JS.Stream(ctx, streams.StreamSessions)
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cons, err := s.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	for range info.State.Msgs {
		m, err := cons.Next(jetstream.FetchMaxWait(spinetest.WaitTimeout))
		if err != nil {
			t.Fatal(err)
		}
		var e streams.Envelope
		if err := json.Unmarshal(m.Data(), &e); err != nil {
			t.Fatal(err)
		}
		if e.SessionID == session {
			f(e)
		}
	}
}

// One session in two files (its transcript and a subagent's), both
// growing across restarts, with a pass that spine accepted but whose
// offsets were never saved: after the restart every line is stored once.
// Chunk ids and the resume point follow the order lines were fed, so a
// restart that fed the files in another order lost some lines and stored
// others twice.
func TestRestartKeepsTheOrderFilesWereFed(t *testing.T) {
	a, n := testAPINode(t)
	home := t.TempDir()
	const session = "5b0c1f7e-2d4a-4c8e-9f6b-3a1d2e4f5a6b"
	main := filepath.Join(home, "projects", "-w", session+".jsonl")
	sub := filepath.Join(home, "projects", "-w", session, "subagents", "agent-a1.jsonl")
	for _, p := range []string{main, sub} {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	var want []string
	line := func(path, text string, sidechain bool, i int) {
		want = append(want, text)
		l, _ := json.Marshal(map[string]any{"type": "user", "sessionId": session, "isSidechain": sidechain,
			"uuid": fmt.Sprintf("00000000-0000-4000-8000-%012d", len(want)), "cwd": "/w",
			"timestamp": fmt.Sprintf("2026-01-01T00:00:%02dZ", len(want)),
			"message":   map[string]any{"role": "user", "content": text}})
		f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if _, err := f.Write(append(l, '\n')); err != nil {
			t.Fatal(err)
		}
	}
	state := filepath.Join(t.TempDir(), "state.json")
	run := func(sink importer.Sink) (Stats, error) {
		c, err := New(Options{ClaudeDir: home, StatePath: state, Machine: "m1", Sink: sink})
		if err != nil {
			t.Fatal(err)
		}
		err = c.Once(context.Background())
		return c.Stats(), err
	}
	line(main, "main 1", false, 1)
	line(sub, "sub 1", true, 1)
	if _, err := run(importer.NewHTTPSink(a, 500)); err != nil {
		t.Fatal(err)
	}
	line(main, "main 2", false, 2)
	line(sub, "sub 2", true, 2)
	if _, err := run(flushFails{importer.NewHTTPSink(a, 500)}); err == nil {
		t.Fatal("the failing pass did not fail")
	}
	caughtUp(t, a, n, session)
	line(main, "main 3", false, 3)
	line(sub, "sub 3", true, 3)
	st, err := run(importer.NewHTTPSink(a, 500))
	if err != nil {
		t.Fatal(err)
	}
	if st.Duplicates != 0 {
		t.Errorf("%d of %d envelopes sent after the restart were duplicates", st.Duplicates, st.Sent)
	}
	got := map[string]int{}
	for text, count := range chunkTexts(t, n, session) {
		got[strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(text), ">"))] += count
	}
	for _, text := range want {
		if got[text] != 1 {
			t.Errorf("line %q stored %d times, want once (stored: %v)", text, got[text], got)
		}
	}
}

// A root that is missing for a pass (a home unmounted, say) proves no file
// under it deleted: their saved offsets stay. A file deleted from a
// readable directory is forgotten.
func TestScanErrorKeepsOffsets(t *testing.T) {
	a := testAPI(t)
	home := t.TempDir()
	data := crudTranscript(t)
	path := crudPath(home)
	other := filepath.Join(home, "projects", "-w", "other.jsonl")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{path, other} {
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	statePath := filepath.Join(t.TempDir(), "state.json")
	once := func() *state {
		t.Helper()
		c, err := New(Options{ClaudeDir: home, StatePath: statePath, Machine: "m1", Sink: importer.NewHTTPSink(a, 500)})
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Once(context.Background()); err != nil {
			t.Fatal(err)
		}
		st, err := loadState(statePath)
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	once()
	projects := filepath.Join(home, "projects")
	if err := os.Rename(projects, projects+".away"); err != nil {
		t.Fatal(err)
	}
	if st := once(); st.Files[path] == nil || st.Files[path].Offset != int64(len(data)) {
		t.Fatalf("with the root missing, the saved offset became %+v, want %d kept", st.Files[path], len(data))
	}
	if err := os.Rename(projects+".away", projects); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(other); err != nil {
		t.Fatal(err)
	}
	st := once()
	if st.Files[path] == nil || st.Files[other] != nil {
		t.Fatalf("after a file was deleted: kept %v, forgotten %v; want the first kept and the deleted one forgotten",
			st.Files[path] != nil, st.Files[other] == nil)
	}
}

// A file that cannot be opened is logged, not passed over in silence.
func TestUnreadableFileLogged(t *testing.T) {
	a := testAPI(t)
	home := t.TempDir()
	loop := filepath.Join(home, "projects", "-w", "loop.jsonl")
	if err := os.MkdirAll(filepath.Dir(loop), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(loop, loop); err != nil { // opening it fails: too many links
		t.Fatal(err)
	}
	var logs bytes.Buffer
	c, err := New(Options{ClaudeDir: home, StatePath: filepath.Join(t.TempDir(), "state.json"), Machine: "m1",
		Sink: importer.NewHTTPSink(a, 500), Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Once(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(logs.String(), "cannot be read") || !strings.Contains(logs.String(), "loop.jsonl") {
		t.Fatalf("nothing logged about the unreadable file; the log:\n%s", logs.String())
	}
}

// Two collectors on one state file would overwrite each other's offsets:
// the second refuses to start, with an error naming the file, until the
// first lets go of it.
func TestStateFileLocked(t *testing.T) {
	home, state := t.TempDir(), filepath.Join(t.TempDir(), "state.json")
	opts := Options{ClaudeDir: home, StatePath: state, Machine: "m1", Sink: importer.DiscardSink{}}
	first, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	_, err = New(opts)
	if !errors.Is(err, ErrStateLocked) || !strings.Contains(err.Error(), state) {
		t.Fatalf("second collector on one state file: %v, want ErrStateLocked naming %s", err, state)
	}
	if err := first.Once(context.Background()); err != nil { // lets go as it returns
		t.Fatal(err)
	}
	again, err := New(opts)
	if err != nil {
		t.Fatalf("after the first one ended: %v", err)
	}
	again.Close()
}
