package collect

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/spinehq/spine/accounting"
	"github.com/spinehq/spine/apps"
	"github.com/spinehq/spine/importer"
	"github.com/spinehq/spine/internal/spinetest"
	"github.com/spinehq/spine/node"
	"github.com/spinehq/spine/streams"
)

// sessionRow is what the tests read of GET /v1/sessions/{id}.
type sessionRow struct {
	Kind          string             `json:"kind"`
	AppSessionRef string             `json:"appSessionRef"`
	WorkerID      string             `json:"workerId"`
	LastSeq       int64              `json:"lastSeq"`
	EndedAt       *time.Time         `json:"endedAt"`
	Tokens        *accounting.Tokens `json:"tokens"`
	Origin        string             `json:"origin"`
}

// waitSession polls the session until ok says it is as wanted.
func waitSession(t *testing.T, a api, id string, what string, ok func(sessionRow) bool) sessionRow {
	t.Helper()
	deadline := time.Now().Add(spinetest.WaitTimeout)
	for {
		var s sessionRow
		if a.Do(context.Background(), http.MethodGet, "/v1/sessions/"+id, nil, &s) == nil && ok(s) {
			return s
		}
		if time.Now().After(deadline) {
			t.Fatalf("session %s: timed out waiting for %s (last %+v)", id, what, s)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// routerTokens waits for a session's router-call row and returns its tokens.
func routerTokens(t *testing.T, n *node.Node, id string) accounting.Tokens {
	t.Helper()
	deadline := time.Now().Add(spinetest.WaitTimeout)
	for {
		var tk accounting.Tokens
		err := n.Pool.QueryRow(context.Background(), `SELECT input_tokens, output_tokens, cache_read_tokens,
			cache_write_tokens, reasoning_tokens FROM router_calls WHERE session_id = $1`, id).
			Scan(&tk.Input, &tk.Output, &tk.CacheRead, &tk.CacheWrite, &tk.Reasoning)
		if err == nil {
			tk.Total = tk.Input + tk.Output
			return tk
		}
		if time.Now().After(deadline) {
			t.Fatalf("no router call for %s: %v", id, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// lineEnd is the end of the line data[n] is in.
func lineEnd(data []byte, n int) int { return n + bytes.IndexByte(data[n:], '\n') + 1 }

// halfTranscript writes the crud transcript's first half (up to a line's
// end) where Claude Code keeps it under home, its modification time mtime
// unless zero, and returns its path and the rest.
func halfTranscript(t *testing.T, home string, mtime time.Time) (path string, rest []byte) {
	t.Helper()
	data := crudTranscript(t)
	path = crudPath(home)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	half := lineEnd(data, len(data)/2)
	if err := os.WriteFile(path, data[:half], 0o644); err != nil {
		t.Fatal(err)
	}
	if !mtime.IsZero() {
		if err := os.Chtimes(path, mtime, mtime); err != nil {
			t.Fatal(err)
		}
	}
	return path, data[half:]
}

func addTokens(a, b accounting.Tokens) accounting.Tokens {
	return accounting.Tokens{Input: a.Input + b.Input, Output: a.Output + b.Output, CacheRead: a.CacheRead + b.CacheRead,
		CacheWrite: a.CacheWrite + b.CacheWrite, Reasoning: a.Reasoning + b.Reasoning, Total: a.Total + b.Total}
}

// A transcript quiet for --idle (its modification time) has its session
// ended by the collector, with its usage: the router-call row exists. Lines
// the app writes later (claude --resume appends to the same transcript)
// are a continuation: a new session, kind attach, the machine its
// workerId, the app's session id its appSessionRef, its usage only what
// came after. The two rows add up to the whole transcript's tokens, and
// spine import of the file afterwards publishes nothing.
func TestIdleEndsAndContinues(t *testing.T) {
	a, n := testAPINode(t)
	home := t.TempDir()
	state := filepath.Join(t.TempDir(), "state.json")
	old := time.Now().Add(-time.Hour)
	collectOnce := func() {
		t.Helper()
		c, err := New(Options{ClaudeDir: home, StatePath: state, Machine: "m1", Sink: importer.NewHTTPSink(a, 500), Idle: 10 * time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Once(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	path, rest := halfTranscript(t, home, old)
	collectOnce()
	id := "8122657c-fe54-4dc9-89a3-20049e8a84f7"
	first := waitSession(t, a, id, "its idle end", func(s sessionRow) bool { return s.EndedAt != nil })
	if first.Tokens == nil || first.Tokens.Total == 0 || first.Kind != "attach" || first.WorkerID != "m1" {
		t.Fatalf("idle-ended session: %+v", first)
	}
	firstCall := routerTokens(t, n, id)

	appendTo(t, path, rest) // the app resumed: new lines, a fresh modification time
	collectOnce()
	cont := apps.ContinuationID("claude-code", id, first.LastSeq, 0)
	open := waitSession(t, a, cont, "the continuation", func(s sessionRow) bool { return s.LastSeq > 0 })
	if open.EndedAt != nil || open.Kind != "attach" || open.WorkerID != "m1" || open.AppSessionRef != id {
		t.Fatalf("continuation: %+v", open)
	}
	if err := os.Chtimes(path, old, old); err != nil {
		t.Fatal(err)
	}
	collectOnce()
	waitSession(t, a, cont, "the continuation's idle end", func(s sessionRow) bool { return s.EndedAt != nil })
	contCall := routerTokens(t, n, cont)

	dry, err := importer.Import(context.Background(), []string{path}, importer.Options{Sink: importer.DiscardSink{}})
	if err != nil {
		t.Fatal(err)
	}
	if got := addTokens(firstCall, contCall); got != dry.Tokens {
		t.Fatalf("router calls %+v + %+v = %+v, want the transcript's %+v", firstCall, contCall, got, dry.Tokens)
	}
	imp, err := importer.Import(context.Background(), []string{path}, importer.Options{Sink: importer.NewHTTPSink(a, 500)})
	if err != nil {
		t.Fatal(err)
	}
	if imp.Envelopes != 0 {
		js, _ := json.Marshal(imp.PerSession)
		t.Fatalf("import after collect published %d envelopes: %s", imp.Envelopes, js)
	}
}

func appendTo(t *testing.T, path string, data []byte) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(data); err != nil {
		t.Fatal(err)
	}
}

// A session imported first (spine import ends it) and then collected while
// the app goes on: its later part is a continuation the collector records,
// kind attach with the machine as its workerId and the app's session id
// as its appSessionRef; the imported part stays as imported. An import of
// the whole file afterwards publishes nothing.
func TestImportedFirstThenCollected(t *testing.T) {
	a, _ := testAPINode(t)
	home := t.TempDir()
	path, rest := halfTranscript(t, home, time.Time{})
	if _, err := importer.Import(context.Background(), []string{path}, importer.Options{Sink: importer.NewHTTPSink(a, 500)}); err != nil {
		t.Fatal(err)
	}
	id := "8122657c-fe54-4dc9-89a3-20049e8a84f7"
	imported := waitSession(t, a, id, "the import's end", func(s sessionRow) bool { return s.EndedAt != nil })

	appendTo(t, path, rest)
	c, err := New(Options{ClaudeDir: home, StatePath: filepath.Join(t.TempDir(), "state.json"), Machine: "m1",
		Sink: importer.NewHTTPSink(a, 500)})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Once(context.Background()); err != nil {
		t.Fatal(err)
	}
	cont := apps.ContinuationID("claude-code", id, imported.LastSeq, 0)
	s := waitSession(t, a, cont, "the collected continuation", func(s sessionRow) bool { return s.LastSeq > 0 })
	if s.Kind != "attach" || s.WorkerID != "m1" || s.AppSessionRef != id {
		t.Fatalf("continuation of an imported session: %+v", s)
	}
	if again := waitSession(t, a, id, "the imported session", func(sessionRow) bool { return true }); again.Kind == "attach" ||
		again.LastSeq != imported.LastSeq {
		t.Fatalf("the imported session changed: %+v, was %+v", again, imported)
	}
	imp, err := importer.Import(context.Background(), []string{path}, importer.Options{Sink: importer.NewHTTPSink(a, 500)})
	if err != nil {
		t.Fatal(err)
	}
	if imp.Envelopes != 1 { // the continuation's end: the collector leaves it open (not idle yet)
		t.Fatalf("import after collect published %d envelopes, want the continuation's end", imp.Envelopes)
	}
}

// lagging is spine's projection behind its log for one session: it reads
// the session as running for its first lies answers, as it does for a
// moment after spine accepted the session's end.
type lagging struct {
	importer.Sink
	id   string
	lies int
}

func (l *lagging) Recorded(ctx context.Context, id string) (apps.Recorded, error) {
	r, err := l.Sink.Recorded(ctx, id)
	if id == l.id && r.Ended && l.lies > 0 {
		l.lies--
		r.Ended, r.Usage, r.Cost = false, nil, nil
	}
	return r, err
}

// A collector started again just after it ended a session as idle, while
// spine has accepted the end but not yet recorded it, waits for the end
// before it asks where the session stands: the lines the app added go to a
// continuation, none to the ended session (which would refuse them).
func TestRestartWaitsForTheIdleEnd(t *testing.T) {
	a, _ := testAPINode(t)
	home := t.TempDir()
	state := filepath.Join(t.TempDir(), "state.json")
	old := time.Now().Add(-time.Hour)
	path, rest := halfTranscript(t, home, old)
	id := "8122657c-fe54-4dc9-89a3-20049e8a84f7"
	collectOnce := func(sink importer.Sink) {
		t.Helper()
		c, err := New(Options{ClaudeDir: home, StatePath: state, Machine: "m1", Sink: sink})
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Once(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	collectOnce(importer.NewHTTPSink(a, 500))
	first := waitSession(t, a, id, "its idle end", func(s sessionRow) bool { return s.EndedAt != nil })

	appendTo(t, path, rest)
	collectOnce(&lagging{Sink: importer.NewHTTPSink(a, 500), id: id, lies: 3})
	cont := apps.ContinuationID("claude-code", id, first.LastSeq, 0)
	waitSession(t, a, cont, "the continuation", func(s sessionRow) bool { return s.LastSeq > 0 })
	if again := waitSession(t, a, id, "the ended session", func(sessionRow) bool { return true }); again.LastSeq != first.LastSeq {
		t.Fatalf("the ended session was sent chunks: last seq %d, was %d", again.LastSeq, first.LastSeq)
	}
}

// A running collector whose last pass is longer ago than --idle by the
// wall clock (the laptop slept) asks spine again before it reads on: a
// session spine ended meanwhile (its idle sweeper; here an end sent to
// spine directly) takes no more, and the lines the app wrote after are a
// continuation. Without the question they would be sent to the ended
// session, and refused.
func TestGapAsksSpineAgain(t *testing.T) {
	a, _ := testAPINode(t)
	home := t.TempDir()
	old := time.Now().Add(-time.Hour) // not held as new (see fresh)
	path, rest := halfTranscript(t, home, old)
	c, err := New(Options{ClaudeDir: home, StatePath: filepath.Join(t.TempDir(), "state.json"), Machine: "m1",
		Sink: importer.NewHTTPSink(a, 500), Idle: 10 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	if err := c.replay(ctx); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	if err := c.recheck(ctx, now); err != nil {
		t.Fatal(err)
	}
	if err := c.pass(ctx, c.quiet()); err != nil {
		t.Fatal(err)
	}
	id := "8122657c-fe54-4dc9-89a3-20049e8a84f7"
	waitSession(t, a, id, "the collected session", func(s sessionRow) bool { return s.LastSeq > 0 })
	// spine ends it while the machine sleeps.
	end, _ := json.Marshal([]map[string]any{{"v": 1, "type": "session.end", "id": "swept-" + id, "at": now.UTC(),
		"sessionId": id, "status": "timeout"}})
	var resp map[string]any
	if err := a.Do(ctx, http.MethodPost, "/v1/ingest", end, &resp); err != nil {
		t.Fatal(err)
	}
	s := waitSession(t, a, id, "its end", func(s sessionRow) bool { return s.EndedAt != nil }) // after its chunks

	appendTo(t, path, rest)
	if err := os.Chtimes(path, old, old); err != nil {
		t.Fatal(err)
	}
	if err := c.recheck(ctx, now.Add(time.Hour)); err != nil { // the wall clock after the sleep
		t.Fatal(err)
	}
	if err := c.pass(ctx, c.quiet()); err != nil {
		t.Fatal(err)
	}
	cont := apps.ContinuationID("claude-code", id, s.LastSeq, 0)
	waitSession(t, a, cont, "the continuation", func(s sessionRow) bool { return s.LastSeq > 0 && s.AppSessionRef == id })
}

// forkLine is a Claude Code transcript line of session sid: a prompt
// (n == 0) or response msg with n tokens of each kind.
func forkLine(sid, uuid, msg string, n int64) string {
	if n == 0 {
		return fmt.Sprintf(`{"type":"user","sessionId":%q,"uuid":%q,"timestamp":"2026-12-01T09:00:00Z","cwd":"/w","message":{"role":"user","content":"go"}}`+"\n", sid, uuid)
	}
	return fmt.Sprintf(`{"type":"assistant","sessionId":%q,"uuid":%q,"timestamp":"2026-12-01T09:00:01Z","requestId":"r-%s","message":{"id":%q,"model":"claude-x",`+
		`"role":"assistant","content":[{"type":"text","text":"answer %s"}],"usage":{"input_tokens":%d,"output_tokens":%d,"cache_creation_input_tokens":0,"cache_read_input_tokens":0}}}`+"\n",
		sid, uuid, msg, msg, msg, n, n)
}

// A --fork-session child copies its parent's responses, which the parent
// counted; both were ended as idle. After a restart with the parent's file
// deleted, the replay no longer reads the parent, and the child's copy of
// its response would count again in a continuation of the child: it must
// not. The two router-call rows stay the only ones, and add up to the
// responses once each.
func TestDeletedParentNotCountedAgainInTheFork(t *testing.T) {
	a, n := testAPINode(t)
	home := t.TempDir()
	x, y := "11111111-0000-4000-8000-000000000001", "22222222-0000-4000-8000-000000000002"
	px, py := filepath.Join(home, "projects", "-w", x+".jsonl"), filepath.Join(home, "projects", "-w", y+".jsonl")
	if err := os.MkdirAll(filepath.Dir(px), 0o755); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-time.Hour)
	for path, data := range map[string]string{
		px: forkLine(x, "x0", "", 0) + forkLine(x, "x1", "a", 1),
		py: forkLine(y, "y0", "", 0) + forkLine(y, "y1", "a", 1) + forkLine(y, "y2", "b", 10),
	} {
		if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(path, old, old); err != nil {
			t.Fatal(err)
		}
	}
	state := filepath.Join(t.TempDir(), "state.json")
	collectOnce := func() {
		t.Helper()
		c, err := New(Options{ClaudeDir: home, StatePath: state, Machine: "m1", Sink: importer.NewHTTPSink(a, 500), Idle: 10 * time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Once(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	collectOnce()
	waitSession(t, a, x, "the parent's idle end", func(s sessionRow) bool { return s.EndedAt != nil })
	child := waitSession(t, a, y, "the child's idle end", func(s sessionRow) bool { return s.EndedAt != nil })
	if tk := routerTokens(t, n, y); tk.Output != 10 {
		t.Fatalf("the child's router call %+v, want its own response alone", tk)
	}
	if err := os.Remove(px); err != nil {
		t.Fatal(err)
	}
	collectOnce()
	// A continuation's end would be in the log by now (Once returns once
	// spine accepted it): a probe session ended after it is accounted after it.
	at := time.Now().UTC()
	probe, _ := json.Marshal([]map[string]any{
		{"v": 1, "type": "session.start", "id": "probe-start", "at": at, "sessionId": "probe", "app": "claude-code", "kind": "open"},
		{"v": 1, "type": "session.end", "id": "probe-end", "at": at, "sessionId": "probe", "status": "done",
			"usage": map[string]any{"inputTokens": 1, "outputTokens": 1}}})
	var resp map[string]any
	if err := a.Do(context.Background(), http.MethodPost, "/v1/ingest", probe, &resp); err != nil {
		t.Fatal(err)
	}
	routerTokens(t, n, "probe")
	var calls int
	if err := n.Pool.QueryRow(context.Background(), `SELECT count(*) FROM router_calls WHERE session_id <> 'probe'`).Scan(&calls); err != nil || calls != 2 {
		t.Fatalf("%d router calls (%v), want the parent's and the child's; continuation %s",
			calls, err, apps.ContinuationID("claude-code", y, child.LastSeq, 0))
	}
}

// failSecondFlush is a sink whose second Flush fails after spine took the
// envelopes: a crash just after the idle ends were sent.
type failSecondFlush struct {
	importer.Sink
	n int
}

func (f *failSecondFlush) Flush(ctx context.Context) (importer.SinkStats, error) {
	st, err := f.Sink.Flush(ctx)
	if f.n++; err == nil && f.n == 2 {
		err = errors.New("crashed")
	}
	return st, err
}

// readState reads the collector's state file.
func readState(t *testing.T, path string) *state {
	t.Helper()
	st, err := loadState(path)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// The sessions an idle pass ends are in the state file before their ends
// are sent (a crash after spine took them still makes the next start wait
// for them); a running collector drops them once spine has recorded the
// ends; a start-up finds one spine never had gone at once; and one spine
// keeps reading as running stops the start-up with an error after the
// wait, rather than sending lines to a session already ended.
func TestEndingKeptUntilRecorded(t *testing.T) {
	a, _ := testAPINode(t)
	home := t.TempDir()
	old := time.Now().Add(-time.Hour)
	halfTranscript(t, home, old)
	statePath := filepath.Join(t.TempDir(), "state.json")
	id := "8122657c-fe54-4dc9-89a3-20049e8a84f7"
	collector := func(sink importer.Sink) *Collector {
		t.Helper()
		c, err := New(Options{ClaudeDir: home, StatePath: statePath, Machine: "m1", Sink: sink})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	if err := collector(&failSecondFlush{Sink: importer.NewHTTPSink(a, 500)}).Once(context.Background()); err == nil {
		t.Fatal("the idle pass's flush did not fail")
	}
	if st := readState(t, statePath); !slices.Equal(st.Ending, []string{id}) {
		t.Fatalf("after a crash as the idle end went out, the state's ending: %v", st.Ending)
	}
	waitSession(t, a, id, "its idle end", func(s sessionRow) bool { return s.EndedAt != nil })

	// A running collector (one endIdle after another) drops what spine recorded.
	c := collector(importer.NewHTTPSink(a, 500))
	ctx := context.Background()
	c.st.Ending = append(c.st.Ending, id)
	if err := c.dropRecordedEnds(ctx); err != nil || len(c.st.Ending) != 0 || len(readState(t, statePath).Ending) != 0 {
		t.Fatalf("ending after spine recorded it: %v (%v)", c.st.Ending, err)
	}
	c.Close()

	// One spine never had: gone at once. One it reads as running: an error.
	st := readState(t, statePath)
	st.Ending = []string{"never-recorded"}
	if err := st.save(statePath); err != nil {
		t.Fatal(err)
	}
	if err := collector(importer.NewHTTPSink(a, 500)).Once(ctx); err != nil || len(readState(t, statePath).Ending) != 0 {
		t.Fatalf("a start-up with an end spine never had: %v, ending %v", err, readState(t, statePath).Ending)
	}
	defer func(w time.Duration) { endWait = w }(endWait)
	endWait = 300 * time.Millisecond
	st = readState(t, statePath)
	st.Ending = []string{id}
	if err := st.save(statePath); err != nil {
		t.Fatal(err)
	}
	err := collector(&lagging{Sink: importer.NewHTTPSink(a, 500), id: id, lies: 1 << 30}).Once(ctx)
	if err == nil || !strings.Contains(err.Error(), "has not recorded the end") {
		t.Fatalf("a start-up whose end spine never records: %v", err)
	}
}

// usageCount is how many session.usage the log holds.
func usageCount(t *testing.T, n *node.Node) uint64 {
	t.Helper()
	s, err := n.JS.Stream(context.Background(), streams.StreamSessions)
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(context.Background(), jetstream.WithSubjectFilter(streams.SessionSubject("*", streams.TypeSessionUsage)))
	if err != nil {
		t.Fatal(err)
	}
	var c uint64
	for _, m := range info.State.Subjects {
		c += m
	}
	return c
}

// A pass sends one session.usage per session at most, however many of its
// lines changed the usage (the crud transcript has several responses), and
// none for a file already quiet past --idle (a backfill: the session ends
// in the same pass, with that usage).
func TestUsageOncePerPass(t *testing.T) {
	for _, backfill := range []bool{true, false} {
		a, n := testAPINode(t)
		home := t.TempDir()
		path := writeCrud(t, home)
		if backfill {
			old := time.Now().Add(-time.Hour)
			if err := os.Chtimes(path, old, old); err != nil {
				t.Fatal(err)
			}
		}
		c, err := New(Options{ClaudeDir: home, StatePath: filepath.Join(t.TempDir(), "state.json"), Machine: "m1",
			Sink: importer.NewHTTPSink(a, 500), Idle: 10 * time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Once(context.Background()); err != nil {
			t.Fatal(err)
		}
		want := map[bool]uint64{true: 0, false: 1}[backfill]
		if got := usageCount(t, n); got != want {
			t.Fatalf("backfill=%v: %d session.usage, want %d", backfill, got, want)
		}
	}
}
