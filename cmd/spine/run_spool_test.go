package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/spinehq/spine/apps"
	"github.com/spinehq/spine/auth"
	"github.com/spinehq/spine/importer"
	"github.com/spinehq/spine/internal/config"
	"github.com/spinehq/spine/internal/spinetest"
	"github.com/spinehq/spine/node"
	"github.com/spinehq/spine/streams"
)

// freeAddr is a local address nothing listens on.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// logged is how many envelopes of the session the log (JetStream) holds
// on each of its subjects: start, chunk, end.
func logged(t *testing.T, n *node.Node, id string) (starts, chunks, ends uint64) {
	t.Helper()
	s, err := n.JS.Stream(context.Background(), streams.StreamSessions)
	if err != nil {
		t.Fatal(err)
	}
	count := func(typ string) uint64 {
		subj := streams.SessionSubject(id, typ)
		info, err := s.Info(context.Background(), jetstream.WithSubjectFilter(subj))
		if err != nil {
			t.Fatal(err)
		}
		return info.State.Subjects[subj]
	}
	return count(streams.TypeSessionStart), count(streams.TypeSessionChunk), count(streams.TypeSessionEnd)
}

// Spine stopped mid-run and started again on the same PostgreSQL and
// JetStream store and port: the app goes on writing while spine is down,
// the lines wait in the spool, and once spine answers every one is
// delivered, in order and once: the log holds one start, one end and one
// chunk a seq, the transcript each text once, and an import of the same
// output publishes nothing. Before the spool, what spine did not take
// within six tries was lost (exit 75).
func TestRunSpineRestarted(t *testing.T) {
	var cfg config.Config
	addr, dataDir := freeAddr(t), t.TempDir()
	n, _ := testNodeWith(t, func(c *config.Config) {
		c.HTTPAddr, c.DataDir = addr, dataDir
		cfg = *c
	})
	old := maxTransientWait
	maxTransientWait = 500 * time.Millisecond
	t.Cleanup(func() { maxTransientWait = old })
	dir := t.TempDir()
	app := script(t, "head -n 3 "+fastFixture+"\nuntil [ -e "+dir+"/down ]; do sleep 0.05; done\n"+
		"tail -n +4 "+fastFixture+"\necho wrote > "+dir+"/wrote\nuntil [ -e "+dir+"/up ]; do sleep 0.05; done")
	done := make(chan error, 1)
	go func() {
		done <- run(context.Background(), []string{"run", "--quiet", "--bin", app, "--", "hi"}) // not capture: the test reads beside it
	}()
	id := apps.SessionID("claude-code", "fa570000-aaaa-aaaa-aaaa-aaaaaaaaaaaa")
	waitTranscript(t, n, id, "standard turn")
	n.Stop()
	touch(t, dir+"/down")
	waitFile(t, dir+"/wrote", "wrote")
	// Down longer than any retry: client.do gives up after 500 ms here, and spine run before the spool gave up after
	// six tries of it, 6.2 s apart in all.
	time.Sleep(7 * time.Second)
	m, err := node.Start(context.Background(), cfg, spinetest.Logger(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Stop)
	touch(t, dir+"/up")
	select {
	case err = <-done:
	case <-time.After(2 * time.Minute):
		t.Fatal("spine run did not end")
	}
	if err != nil {
		t.Fatalf("spine run: %v", err)
	}
	waitIdle(t, m)
	tr, err := capture(t, "read", "transcript", id)
	for _, text := range []string{"standard turn", "fast turn (streaming)", "fast turn (final)", "second model fast turn"} {
		if err != nil || strings.Count(tr, text) != 1 {
			t.Fatalf("transcript, want %q once: %v\n%s", text, err, tr)
		}
	}
	var lastSeq, rows int64
	if err := m.Pool.QueryRow(context.Background(), `SELECT s.last_seq, (SELECT count(*) FROM session_chunks c WHERE c.session_id = s.id)
		FROM sessions s WHERE id = $1`, id).Scan(&lastSeq, &rows); err != nil {
		t.Fatal(err)
	}
	starts, chunks, ends := logged(t, m, id)
	if starts != 1 || ends != 1 || chunks != uint64(lastSeq) || rows != lastSeq || lastSeq < 4 {
		t.Fatalf("the log holds %d starts, %d chunks, %d ends; the session %d chunks up to seq %d", starts, chunks, ends, rows, lastSeq)
	}
	if status, _ := sessionStatus(t, id); status != "done" {
		t.Fatalf("session %q, want done", status)
	}
	if left, _ := spoolFiles(os.Getenv(config.EnvSpoolDir)); len(left) != 0 {
		t.Fatalf("the spool still holds %v", left)
	}
	out, err := capture(t, "import", "--json", fastFixture)
	var sum importer.Summary
	if err != nil || json.Unmarshal([]byte(out), &sum) != nil || sum.Envelopes != 0 || sum.AlreadyRecorded != 1 {
		t.Fatalf("import of the same output: %v\n%s", err, out)
	}
}

// waitTranscript waits until the session's transcript through spine holds want.
func waitTranscript(t *testing.T, n *node.Node, id, want string) {
	t.Helper()
	for deadline := time.Now().Add(spinetest.WaitTimeout); ; time.Sleep(50 * time.Millisecond) {
		waitIdle(t, n)
		out, err := capture(t, "read", "transcript", id)
		if err == nil && strings.Contains(out, want) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("transcript of %s never held %q: %v\n%s", id, want, err, out)
		}
	}
}

func waitIdle(t *testing.T, n *node.Node) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), spinetest.WaitTimeout)
	defer cancel()
	if err := n.WaitIdle(ctx, nil); err != nil {
		t.Fatalf("not caught up: %v", err)
	}
}

// shortRetries makes spine run give up on an unreachable spine quickly.
func shortRetries(t *testing.T) {
	oldWait, oldFlush := maxTransientWait, flushGrace
	maxTransientWait, flushGrace = 500*time.Millisecond, 500*time.Millisecond
	t.Cleanup(func() { maxTransientWait, flushGrace = oldWait, oldFlush })
}

// A run spine never answered leaves its envelopes in the spool (exit
// 75); the next spine run delivers them, and so does spine spool: the
// session is recorded, whole, and the spool is empty.
func TestRunSpoolLeftover(t *testing.T) {
	shortRetries(t)
	for _, deliver := range [][]string{
		{"run", "--quiet", "--bin", "", "--", "hi"}, // a later run, of anything
		{"spool"},
	} {
		t.Run(deliver[0], func(t *testing.T) {
			n, _ := testNode(t) // a spine, and a spool, of its own
			spoolDir := os.Getenv(config.EnvSpoolDir)
			addr := freeAddr(t)
			_, err := capture(t, "run", "--quiet", "--url", "http://"+addr, "--bin", script(t, "cat "+fastFixture), "--", "hi")
			var code appExit
			if !errors.As(err, &code) || code != notRecordedCode {
				t.Fatalf("spine run to no spine: %v, want exit %d", err, notRecordedCode)
			}
			if left, _ := filepath.Glob(filepath.Join(spoolDir, "*.jsonl")); len(left) != 1 {
				t.Fatalf("the spool holds %v, want the run's file", left)
			}
			deliver = slices.Clone(deliver)
			if deliver[0] == "run" {
				deliver[3] = script(t, "exit 0")
			}
			// The same spine, up now: the file goes only where it was for.
			deliver = append([]string{deliver[0], "--url", spineAt(t, addr)}, deliver[1:]...)
			if out, err := capture(t, deliver...); err != nil {
				t.Fatalf("%s: %v\n%s", deliver[0], err, out)
			}
			waitIdle(t, n)
			id := apps.SessionID("claude-code", "fa570000-aaaa-aaaa-aaaa-aaaaaaaaaaaa")
			if status, _ := sessionStatus(t, id); status != "done" {
				t.Fatalf("session %q, want done", status)
			}
			if tr, err := capture(t, "read", "transcript", id); err != nil || !strings.Contains(tr, "second model fast turn") {
				t.Fatalf("transcript: %v\n%s", err, tr)
			}
			if left, _ := spoolFiles(spoolDir); len(left) != 0 {
				t.Fatalf("the spool still holds %v", left)
			}
		})
	}
}

// A full spool (--spool-max) keeps nothing more and counts what it did
// not keep: the app runs to its end, and spine run exits 75 (not fully
// recorded) though the app exited 0.
func TestRunSpoolFull(t *testing.T) {
	n, _ := testNode(t)
	_, err := capture(t, "run", "--quiet", "--spool-max", "1", "--bin", script(t, "cat "+fastFixture), "--", "hi")
	var code appExit
	if !errors.As(err, &code) || code != notRecordedCode {
		t.Fatalf("spine run with a full spool: %v, want exit %d", err, notRecordedCode)
	}
	waitIdle(t, n)
	id := apps.SessionID("claude-code", "fa570000-aaaa-aaaa-aaaa-aaaaaaaaaaaa")
	if out, err := capture(t, "read", "session", id); err == nil {
		t.Fatalf("session recorded from a full spool:\n%s", out)
	}
	if left, _ := spoolFiles(os.Getenv(config.EnvSpoolDir)); len(left) != 0 {
		t.Fatalf("the spool still holds %v", left)
	}
}

// spine run asks spine about its session alone (GET /v1/sessions/{id}),
// never pages through all of the caller's sessions (GET /v1/sessions), as
// it did through the importer's sink.
func TestRunAsksForItsSession(t *testing.T) {
	_, _ = testNode(t)
	var mu sync.Mutex
	var gets []string
	srv := httptest.NewServer(proxyFront(testSpine(), func(w http.ResponseWriter, r *http.Request) bool {
		if r.Method == http.MethodGet {
			mu.Lock()
			gets = append(gets, r.URL.Path)
			mu.Unlock()
		}
		return false
	}))
	defer srv.Close()
	if out, err := capture(t, "run", "--quiet", "--url", srv.URL, "--bin", script(t, "cat "+fastFixture), "--", "hi"); err != nil {
		t.Fatalf("spine run: %v\n%s", err, out)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(gets) != 1 || gets[0] != "/v1/sessions/"+apps.SessionID("claude-code", "fa570000-aaaa-aaaa-aaaa-aaaaaaaaaaaa") {
		t.Fatalf("spine run asked %q, want its session alone", gets)
	}
}

// The owner's spine cancel (POST /v1/sessions/{id}/cancel) stops the app:
// spine run sees cancelRequestedAt on its session, passes the app SIGINT,
// and the session ends cancelled. Before, the app ran on and spine ended
// the session only after its grace.
func TestRunCancelledInSpine(t *testing.T) {
	n, _ := testNode(t)
	old := cancelPoll
	cancelPoll = 100 * time.Millisecond
	defer func() { cancelPoll = old }()
	app := script(t, "trap 'exit 0' INT\nhead -n 3 "+fastFixture+"\nwhile :; do sleep 0.05; done")
	done := make(chan error, 1)
	go func() {
		done <- run(context.Background(), []string{"run", "--quiet", "--bin", app, "--", "hi"}) // not capture: the test reads beside it
	}()
	id := apps.SessionID("claude-code", "fa570000-aaaa-aaaa-aaaa-aaaaaaaaaaaa")
	waitTranscript(t, n, id, "standard turn")
	if out, err := capture(t, "cancel", id, "--reason", "enough"); err != nil {
		t.Fatalf("spine cancel: %v\n%s", err, out)
	}
	var err error
	select {
	case err = <-done:
	case <-time.After(time.Minute):
		t.Fatal("spine run did not stop on the cancel")
	}
	var code appExit
	if !errors.As(err, &code) || code != 130 {
		t.Fatalf("spine run: %v, want 130 (stopped, though the app exited 0)", err)
	}
	waitIdle(t, n)
	status, why := sessionStatus(t, id)
	if status != "cancelled" || !strings.Contains(why, "cancelled in spine") {
		t.Fatalf("session %q (%q), want cancelled by spine run", status, why)
	}
}

// runApp delivers leftovers only when asked (spine run does; the runner,
// whose token writes only its tasks' sessions, does not).
func TestRunAppLeftoversAsked(t *testing.T) {
	_, _ = testNode(t)
	shortRetries(t)
	spoolDir := os.Getenv(config.EnvSpoolDir)
	if _, err := capture(t, "run", "--quiet", "--url", "http://"+freeAddr(t), "--bin", script(t, "cat "+fastFixture), "--", "hi"); err == nil {
		t.Fatal("spine run to no spine succeeded")
	}
	c, err := newClient("", "")
	if err != nil {
		t.Fatal(err)
	}
	argv, format, _ := appArgs("claude-code", []string{"hi"})
	if _, err := runApp(context.Background(), runSpec{Bin: script(t, "exit 0"), Argv: argv, Format: format, API: c}); err != nil {
		t.Fatal(err)
	}
	if left, _ := filepath.Glob(filepath.Join(spoolDir, "*.jsonl")); len(left) != 1 {
		t.Fatalf("the spool holds %v, want the earlier run's file left alone", left)
	}
}

// A long run's spool file holds what waits, not the whole run: once spine
// took all of a file of 1 MiB or more it is emptied, and what is written
// after is delivered from its start, every envelope once.
func TestRunSpoolCompacts(t *testing.T) {
	n, _ := testNode(t)
	c, err := newClient("", "")
	if err != nil {
		t.Fatal(err)
	}
	sp, err := openSpool(os.Getenv(config.EnvSpoolDir), defaultSpoolMax, spoolTarget{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	rs := &runSink{api: c, sp: sp}
	if err := rs.start(ctx); err != nil {
		t.Fatal(err)
	}
	_ = rs.Publish(ctx, spinetest.Start("compacted"))
	text := strings.Repeat("x", 1000)
	seq := int64(0)
	write := func(k int) {
		for range k {
			seq++
			_ = rs.Publish(ctx, spinetest.Text("compacted", seq, text))
		}
	}
	write(1500) // 1.5 MB
	for deadline := time.Now().Add(spinetest.WaitTimeout); ; time.Sleep(20 * time.Millisecond) {
		if fi, err := os.Stat(sp.path); err == nil && fi.Size() == 0 {
			break
		}
		if time.Now().After(deadline) {
			fi, _ := os.Stat(sp.path)
			t.Fatalf("the spool file was never emptied: %d bytes", fi.Size())
		}
	}
	write(500)
	rs.close(ctx)
	rs.d.close()
	if waiting := sp.written - rs.d.taken; waiting != 0 || rs.err != nil {
		t.Fatalf("%d envelopes wait, %v", waiting, rs.err)
	}
	sp.close(true)
	waitIdle(t, n)
	var chunks, last int64
	if err := n.Pool.QueryRow(ctx, `SELECT count(*), max(seq) FROM session_chunks WHERE session_id = 'compacted'`).Scan(&chunks, &last); err != nil {
		t.Fatal(err)
	}
	if chunks != seq || last != seq {
		t.Fatalf("%d chunks up to %d, want %d", chunks, last, seq)
	}
}

// A spine that takes nothing for a while (every ingest held) does not
// block the app: it writes 12,000 lines and exits while spine has taken
// none; then spine answers and every line is delivered. Before the spool,
// a queue of 10,000 envelopes made the reading wait, so the app blocked
// writing its output.
func TestRunNeverBlocksTheApp(t *testing.T) {
	n, _ := testNode(t)
	release := make(chan struct{})
	var once sync.Once
	open := func() { once.Do(func() { close(release) }) }
	srv := httptest.NewServer(proxyFront(testSpine(), func(w http.ResponseWriter, r *http.Request) bool {
		if r.URL.Path == "/v1/ingest" {
			select {
			case <-release:
			case <-r.Context().Done():
				return true
			}
		}
		return false
	}))
	defer srv.Close()
	defer open()
	dir := t.TempDir()
	const lines = 12000
	app := script(t, "head -n 1 "+fastFixture+"\nfor i in $(seq 1 "+fmt.Sprint(lines)+"); do printf "+
		`'{"type":"assistant","message":{"model":"m","id":"msg_%d","type":"message","role":"assistant","content":[{"type":"text","text":"line %d "}],"usage":{"input_tokens":1,"output_tokens":1}},"session_id":"fa570000-aaaa-aaaa-aaaa-aaaaaaaaaaaa","uuid":"00000000-0000-0000-0000-%012d"}\n' $i $i $i`+
		"; done\necho wrote > "+dir+"/wrote")
	done := make(chan error, 1)
	go func() {
		done <- run(context.Background(), []string{"run", "--quiet", "--url", srv.URL, "--bin", app, "--", "hi"})
	}()
	waitFile(t, dir+"/wrote", "wrote") // the app wrote it all and exited while spine took nothing
	open()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("spine run: %v", err)
		}
	case <-time.After(2 * time.Minute):
		t.Fatal("spine run did not end")
	}
	waitIdle(t, n)
	id := apps.SessionID("claude-code", "fa570000-aaaa-aaaa-aaaa-aaaaaaaaaaaa")
	var chunks int64
	if err := n.Pool.QueryRow(context.Background(), `SELECT count(*) FROM session_chunks WHERE session_id = $1`, id).Scan(&chunks); err != nil {
		t.Fatal(err)
	}
	if chunks < lines {
		t.Fatalf("%d chunks, want the %d lines'", chunks, lines)
	}
}

// One process at a time delivers a leftover file: while another holds it,
// spine spool (or a spine run) passes it over; once it is free, it is
// delivered and removed.
func TestRunSpoolLeftoverClaimed(t *testing.T) {
	n, _ := testNode(t)
	shortRetries(t)
	spoolDir := os.Getenv(config.EnvSpoolDir)
	addr := freeAddr(t)
	if _, err := capture(t, "run", "--quiet", "--url", "http://"+addr, "--bin", script(t, "cat "+fastFixture), "--", "hi"); err == nil {
		t.Fatal("spine run to no spine succeeded")
	}
	files, _ := filepath.Glob(filepath.Join(spoolDir, "*.jsonl"))
	if len(files) != 1 {
		t.Fatalf("the spool holds %v", files)
	}
	c, err := newClient(spineAt(t, addr), "")
	if err != nil {
		t.Fatal(err)
	}
	held, err := claimDelivery(c, files[0])
	if err != nil {
		t.Fatal(err)
	}
	if r, err := sendLeftovers(context.Background(), c, spoolDir, true, nil); r.delivered != 0 || err != nil {
		t.Fatalf("delivered %d (%v) of a file another process holds", r.delivered, err)
	}
	held.close()
	if r, err := sendLeftovers(context.Background(), c, spoolDir, true, nil); r.delivered == 0 || len(r.left) != 0 || err != nil {
		t.Fatalf("delivered %d, left %v (%v) once free", r.delivered, r.left, err)
	}
	waitIdle(t, n)
	if status, _ := sessionStatus(t, apps.SessionID("claude-code", "fa570000-aaaa-aaaa-aaaa-aaaaaaaaaaaa")); status != "done" {
		t.Fatalf("session %q, want done", status)
	}
	if left, _ := spoolFiles(spoolDir); len(left) != 0 {
		t.Fatalf("the spool still holds %v", left)
	}
}

// A spool directory spine run cannot write is said before the app starts,
// with how to name another.
func TestRunSpoolUnwritable(t *testing.T) {
	_, _ = testNode(t)
	ro := filepath.Join(t.TempDir(), "a-file") // a file, no directory: even root cannot make one in it
	if err := os.WriteFile(ro, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	started := filepath.Join(t.TempDir(), "started")
	_, err := capture(t, "run", "--quiet", "--spool", filepath.Join(ro, "spool"), "--bin", script(t, "echo > "+started), "--", "hi")
	if err == nil || !strings.Contains(err.Error(), "--spool DIR") {
		t.Fatalf("spine run with an unwritable spool: %v", err)
	}
	if _, err := os.Stat(started); err == nil {
		t.Fatal("the app started without a spool")
	}
}

// otherFixture is fastFixture as another session (another app session id).
func otherFixture(t *testing.T) string {
	return script(t, "sed s/fa570000-aaaa-aaaa-aaaa-aaaaaaaaaaaa/fa570000-bbbb-bbbb-bbbb-bbbbbbbbbbbb/g "+fastFixture)
}

// A write the disk refuses in part (here the file size limit, as a full
// disk would) is cut back: the envelope is counted not kept, and the next
// is a line of its own. Before, the fragment stayed and the next line was
// glued onto it: no JSON, and spine refused the batch with it.
func TestSpoolWriteCutsBack(t *testing.T) {
	sp, err := openSpool(t.TempDir(), defaultSpoolMax, spoolTarget{})
	if err != nil {
		t.Fatal(err)
	}
	defer sp.close(false)
	env := func(id string, text string) *streams.Envelope {
		return &streams.Envelope{V: 1, Type: streams.TypeSessionChunk, ID: id, At: time.Now().UTC(), SessionID: "s",
			Seq: 1, Stream: "stdout", Text: text}
	}
	if !sp.write(env("a", "first")) {
		t.Fatal("first write refused")
	}
	var old syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_FSIZE, &old); err != nil {
		t.Fatal(err)
	}
	lim := old
	lim.Cur = uint64(sp.size) + 20 // room for 20 bytes of the next: a torn write
	if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &lim); err != nil {
		t.Fatal(err)
	}
	ok := sp.write(env("b", strings.Repeat("x", 200)))
	if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &old); err != nil {
		t.Fatal(err)
	}
	if ok || sp.full != 1 {
		t.Fatalf("a torn write: ok %v, not kept %d; want false, 1", ok, sp.full)
	}
	if !sp.write(env("c", "third")) {
		t.Fatal("the write after refused")
	}
	data, err := os.ReadFile(sp.path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	if len(lines) != 2 {
		t.Fatalf("the file holds %d lines, want 2:\n%s", len(lines), data)
	}
	for _, l := range lines {
		if !json.Valid([]byte(l)) {
			t.Fatalf("a line is no JSON: %q", l)
		}
	}
}

// One bad spool file does not block the spool: a line of no whole JSON
// (a fragment glued to the next line, a record torn at the end of an
// earlier run's file) is passed over, told and counted lost, and the rest
// of the file is delivered and the file removed; a file spine refuses as a
// whole request (400) is kept, told, and the newer files still go. Before,
// the bad line had spine refuse the whole batch (400) and sendLeftovers
// stopped at that file: the newer one was never sent.
func TestSpoolPassesOverBadLines(t *testing.T) {
	shortRetries(t)
	n, _ := testNode(t)
	dir := os.Getenv(config.EnvSpoolDir)
	addr := freeAddr(t)
	nowhere := "http://" + addr
	if _, err := capture(t, "run", "--quiet", "--url", nowhere, "--bin", script(t, "cat "+fastFixture), "--", "hi"); err == nil {
		t.Fatal("spine run to no spine succeeded")
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.jsonl"))
	if len(files) != 1 {
		t.Fatalf("the spool holds %v", files)
	}
	first := files[0]
	data, err := os.ReadFile(first)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(data), "\n")
	torn := `{"v":1,"type":"session.chunk","id":"torn-`
	glued := append([]string{lines[0], torn + "\n"}, lines[1:]...)                           // a fragment with the next line's newline
	if err := os.WriteFile(first, []byte(strings.Join(glued, "")+torn), 0o600); err != nil { // and a record torn at the end
		t.Fatal(err)
	}
	refused := strings.TrimSuffix(first, ".jsonl") + "x.jsonl" // between the two
	writeSpoolFile(t, refused, &streams.Envelope{V: 1, Type: streams.TypeSessionChunk, ID: "refused-chunk",
		At: time.Now().UTC(), SessionID: "refused", Seq: 1, Stream: "stdout", Text: "refuse-me"})
	if _, err := capture(t, "run", "--quiet", "--url", nowhere, "--bin", otherFixture(t), "--", "hi"); err == nil {
		t.Fatal("spine run to no spine succeeded")
	}
	// A spine (behind a proxy) that refuses the request with refuse-me as
	// a whole, as it does a body it cannot read.
	proxy := serveAt(t, addr, proxyFront(testSpine(), func(w http.ResponseWriter, r *http.Request) bool {
		body, _ := io.ReadAll(r.Body)
		if strings.Contains(string(body), "refuse-me") {
			http.Error(w, `{"error":{"code":"bad_request","message":"body is not a JSON array of envelopes"}}`, http.StatusBadRequest)
			return true
		}
		r.Body = io.NopCloser(strings.NewReader(string(body)))
		return false
	}))
	out, err := capture(t, "spool", "--url", proxy)
	var code appExit
	if !errors.As(err, &code) || code != notRecordedCode {
		t.Fatalf("spine spool: %v, want exit %d (a file left, lines lost)\n%s", err, notRecordedCode, out)
	}
	waitIdle(t, n)
	for _, app := range []string{"fa570000-aaaa-aaaa-aaaa-aaaaaaaaaaaa", "fa570000-bbbb-bbbb-bbbb-bbbbbbbbbbbb"} {
		if status, _ := sessionStatus(t, apps.SessionID("claude-code", app)); status != "done" {
			t.Fatalf("session of %s %q, want done", app, status)
		}
	}
	left, _ := filepath.Glob(filepath.Join(dir, "*.jsonl"))
	if len(left) != 1 || left[0] != refused {
		t.Fatalf("the spool holds %v, want only %s", left, refused)
	}
}

// spoolFiles is what the spool directory holds of spool files (FILE.jsonl
// and its FILE.sent, FILE.meta...): not a runner's directory (spine run's
// claims are in spool-claims/, beside the spool: collect.Claim).
func spoolFiles(dir string) ([]string, error) {
	all, err := filepath.Glob(filepath.Join(dir, "*"))
	var files []string
	for _, f := range all {
		if fi, err := os.Stat(f); err == nil && !fi.IsDir() {
			files = append(files, f)
		}
	}
	return files, err
}

// spineAt serves, at addr (freeAddr's, nothing listening there before), a
// proxy to the test node's spine: the spine a run to addr found down is
// up.
func spineAt(t *testing.T, addr string) string {
	t.Helper()
	return serveAt(t, addr, httputil.NewSingleHostReverseProxy(testSpine()))
}

// testSpine is the test node's spine (testNode sets SPINE_URL).
func testSpine() *url.URL {
	u, _ := url.Parse(os.Getenv(config.EnvURL))
	return u
}

// proxyFront is a reverse proxy to target with intercept in front: it
// answers a request itself (true) or lets it through (false), as it left
// it (a body read and put back, a wait).
func proxyFront(target *url.URL, intercept func(http.ResponseWriter, *http.Request) bool) http.Handler {
	fwd := httputil.NewSingleHostReverseProxy(target)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !intercept(w, r) {
			fwd.ServeHTTP(w, r)
		}
	})
}

// serveAt serves h at addr.
func serveAt(t *testing.T, addr string, h http.Handler) string {
	t.Helper()
	l, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })
	return "http://" + addr
}

// memberToken is a token of the test node's spine for org/member.
func memberToken(t *testing.T, org, member string) string {
	t.Helper()
	secret, err := auth.DecodeSecret(strings.Repeat("ab", 32))
	if err != nil {
		t.Fatal(err)
	}
	s, err := auth.NewSigner(secret)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := s.Mint(auth.Claims{Org: org, Member: member}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// A spool file goes only to the spine and member it was spooled for
// (FILE.meta: the URL, the token's org and member, a hash of the token,
// never the token): a later spine run with another member's token, or to
// another spine URL, leaves it, and spine spool with those lists it and
// leaves it; spine spool with the same member's token (minted again)
// delivers it. Before, leftovers went to whichever spine and token the
// next run used: one member's prompts into another's store.
func TestSpoolOnlyToItsTarget(t *testing.T) {
	shortRetries(t)
	n, _ := testNode(t)
	dir := os.Getenv(config.EnvSpoolDir)
	addr := freeAddr(t)
	alice := memberToken(t, "dev", "alice")
	if _, err := capture(t, "run", "--quiet", "--url", "http://"+addr, "--token", alice, "--bin", script(t, "cat "+fastFixture), "--", "hi"); err == nil {
		t.Fatal("spine run to no spine succeeded")
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.jsonl"))
	if len(files) != 1 {
		t.Fatalf("the spool holds %v", files)
	}
	meta, err := os.ReadFile(files[0] + ".meta")
	if err != nil || strings.Contains(string(meta), alice) || !strings.Contains(string(meta), `"member":"alice"`) ||
		!strings.Contains(string(meta), addr) {
		t.Fatalf("FILE.meta %s (%v): want the URL and alice, never the token", meta, err)
	}
	url := spineAt(t, addr)
	bob := memberToken(t, "dev", "bob")
	if _, err := capture(t, "run", "--quiet", "--url", url, "--token", bob, "--bin", script(t, "exit 0"), "--", "hi"); err != nil {
		t.Fatalf("bob's spine run: %v", err)
	}
	// The same spine under another URL is another target too.
	if _, err := capture(t, "run", "--quiet", "--token", alice, "--bin", script(t, "exit 0"), "--", "hi"); err != nil {
		t.Fatalf("alice's spine run to another URL: %v", err)
	}
	out, err := capture(t, "spool", "--url", url, "--token", bob)
	if err != nil || !strings.Contains(out, "delivered 0 envelopes") || !strings.Contains(out, "kept "+filepath.Base(files[0])) ||
		!strings.Contains(out, "dev/alice") {
		t.Fatalf("bob's spine spool: %v\n%s", err, out)
	}
	waitIdle(t, n)
	id := apps.SessionID("claude-code", "fa570000-aaaa-aaaa-aaaa-aaaaaaaaaaaa")
	if _, err := os.Stat(files[0]); err != nil {
		t.Fatalf("alice's file is gone (%v): delivered with another's token or URL", err)
	}
	if out, err := capture(t, "spool", "--url", url, "--token", memberToken(t, "dev", "alice")); err != nil {
		t.Fatalf("alice's spine spool: %v\n%s", err, out)
	}
	waitIdle(t, n)
	if out, err := capture(t, "read", "session", id, "--token", alice); err != nil {
		t.Fatalf("alice's session: %v\n%s", err, out)
	}
	if left, _ := spoolFiles(dir); len(left) != 0 {
		t.Fatalf("the spool still holds %v", left)
	}
}

// No process sees a run's spool file before the run locked it: a delivery
// of leftovers at that moment passes it over. Before, the file was made
// as NAME.jsonl and then locked: a spine spool in between claimed the
// empty file, took it for delivered and removed it, and the run wrote
// its whole session into a removed file.
func TestSpoolFileLockedBeforeSeen(t *testing.T) {
	_, _ = testNode(t)
	dir := os.Getenv(config.EnvSpoolDir)
	c, err := newClient("", "")
	if err != nil {
		t.Fatal(err)
	}
	spoolOpening = func(string) {
		if _, err := sendLeftovers(context.Background(), c, dir, true, nil); err != nil {
			t.Error(err)
		}
	}
	defer func() { spoolOpening = nil }()
	sp, err := openSpool(dir, defaultSpoolMax, targetOf(c))
	if err != nil {
		t.Fatal(err)
	}
	defer sp.close(true)
	if _, err := os.Stat(sp.path); err != nil {
		t.Fatalf("the run's spool file, once open: %v", err)
	}
	if _, err := os.Stat(sp.path + ".meta"); err != nil {
		t.Fatalf("its FILE.meta: %v", err)
	}
}

// The spool's bound counts the directory again before it refuses a
// write: a spool full when the run opened its file (another run's file
// waiting) has room once that file is delivered and removed. Before, the
// bound was the snapshot at open: the run kept nothing more, all its life.
func TestSpoolRoomAgain(t *testing.T) {
	old := spoolRecheck
	spoolRecheck = 0
	defer func() { spoolRecheck = old }()
	dir := t.TempDir()
	other := filepath.Join(dir, "0-other.jsonl")
	if err := os.WriteFile(other, []byte(strings.Repeat("x", 10_000)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	sp, err := openSpool(dir, 10_500, spoolTarget{})
	if err != nil {
		t.Fatal(err)
	}
	defer sp.close(true)
	e := &streams.Envelope{V: 1, Type: streams.TypeSessionChunk, ID: "c", At: time.Now().UTC(), SessionID: "s",
		Seq: 1, Stream: "stdout", Text: strings.Repeat("y", 600)}
	if sp.write(e) {
		t.Fatal("a write past the bound was kept")
	}
	if err := os.Remove(other); err != nil { // delivered by another run
		t.Fatal(err)
	}
	if !sp.write(e) {
		t.Fatal("a write that fits once the other file went was refused")
	}
	if sp.full != 1 || sp.written != 1 {
		t.Fatalf("not kept %d, written %d; want 1, 1", sp.full, sp.written)
	}
}

// The spool holds what spine would keep: envelopes redacted (secrets out)
// before they are written; its directory is 0700, its files (FILE.jsonl,
// FILE.sent, FILE.meta) and --save's 0600. Before, the spool held the
// secrets as the app wrote them, and --save was 0644.
func TestSpoolRedactedAndPrivate(t *testing.T) {
	shortRetries(t)
	_, _ = testNode(t)
	dir := filepath.Join(t.TempDir(), "spool")
	save := filepath.Join(t.TempDir(), "out.jsonl")
	secret := "ghp_R4nd0mT0k3nV4lu3Th4tL00ksR34l1234"
	line := `{"type":"system","subtype":"init","session_id":"fa570000-cccc-cccc-cccc-cccccccccccc","model":"m","uuid":"11111111-1111-1111-1111-111111111111"}` + "\n" +
		`{"type":"assistant","message":{"model":"m","id":"msg_1","type":"message","role":"assistant","content":[{"type":"text","text":"token ` + secret + `"}]},"session_id":"fa570000-cccc-cccc-cccc-cccccccccccc","uuid":"22222222-2222-2222-2222-222222222222"}`
	out := filepath.Join(t.TempDir(), "app.jsonl")
	if err := os.WriteFile(out, []byte(line+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, _ = capture(t, "run", "--quiet", "--spool", dir, "--save", save, "--url", "http://"+freeAddr(t),
		"--bin", script(t, "cat "+out), "--", "hi")
	files, _ := filepath.Glob(filepath.Join(dir, "*.jsonl"))
	if len(files) != 1 {
		t.Fatalf("the spool holds %v", files)
	}
	data, err := os.ReadFile(files[0])
	if err != nil || strings.Contains(string(data), secret) || !strings.Contains(string(data), "token ") {
		t.Fatalf("the spool file (%v) holds the secret, or not the chunk:\n%s", err, data)
	}
	for path, want := range map[string]os.FileMode{dir: 0o700, files[0]: 0o600, files[0] + ".meta": 0o600,
		files[0] + ".sent": 0o600, save: 0o600} {
		fi, err := os.Stat(path)
		if err != nil {
			if strings.HasSuffix(path, ".sent") {
				continue // nothing taken: no FILE.sent
			}
			t.Fatal(err)
		}
		if fi.Mode().Perm() != want {
			t.Errorf("%s: mode %v, want %v", filepath.Base(path), fi.Mode().Perm(), want)
		}
	}
}

// Compaction saves FILE.sent at 0 before it empties the file: when it
// cannot (FILE.sent not writable), nothing changes, and once it can, the
// file is emptied and what comes after is delivered from its start.
// Before, the file was emptied first: FILE.sent not written, compact gave
// up with the file empty and the spool's size still the old one.
func TestSpoolCompactSavesFirst(t *testing.T) {
	_, _ = testNode(t)
	c, err := newClient("", "")
	if err != nil {
		t.Fatal(err)
	}
	sp, err := openSpool(os.Getenv(config.EnvSpoolDir), defaultSpoolMax, targetOf(c))
	if err != nil {
		t.Fatal(err)
	}
	defer sp.close(true)
	d, err := openDelivery(c, sp.path)
	if err != nil {
		t.Fatal(err)
	}
	defer d.close()
	ctx := context.Background()
	sp.write(spinetest.Start("compact-first"))
	for i := range 1100 {
		sp.write(spinetest.Text("compact-first", int64(i+1), strings.Repeat("x", 1000)))
	}
	for {
		n, err := d.step(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			break
		}
	}
	size := sp.size
	if err := os.Mkdir(sp.path+".sent.tmp", 0o700); err != nil { // FILE.sent cannot be written
		t.Fatal(err)
	}
	if sp.compact(d) {
		t.Fatal("compacted without saving FILE.sent")
	}
	if fi, err := os.Stat(sp.path); err != nil || fi.Size() != size || sp.size != size || d.off != size {
		t.Fatalf("after a compaction that could not save: file %v (%v), spool %d, delivery %d; want all %d", fi.Size(), err, sp.size, d.off, size)
	}
	if err := os.Remove(sp.path + ".sent.tmp"); err != nil {
		t.Fatal(err)
	}
	if !sp.compact(d) {
		t.Fatal("not compacted")
	}
	if b, _ := os.ReadFile(sp.path + ".sent"); string(b) != "0" || sp.size != 0 || d.off != 0 {
		t.Fatalf("after compaction: FILE.sent %q, spool %d, delivery %d; want 0", b, sp.size, d.off)
	}
	sp.write(spinetest.Text("compact-first", 1101, "after"))
	if n, err := d.step(ctx); n != 1 || err != nil {
		t.Fatalf("delivered %d (%v) after compaction, want 1", n, err)
	}
}

// A leftover spine refuses for who sent it (another member's session) is
// kept for a delivery that may, but not for ever: refused maxRefusals
// times, over refusedFor since the first, it is dropped and told (exit
// 75); spine spool --drop FILE gives one up at once. Before, such a file
// was kept and tried on every later run for ever.
func TestSpoolRefusedFileEnds(t *testing.T) {
	n, _ := testNode(t)
	dir := os.Getenv(config.EnvSpoolDir)
	oldMax, oldFor := maxRefusals, refusedFor
	maxRefusals, refusedFor = 3, 0
	defer func() { maxRefusals, refusedFor = oldMax, oldFor }()
	alice, bob := memberToken(t, "dev", "alice"), memberToken(t, "dev", "bob")
	ca, err := newClient("", alice)
	if err != nil {
		t.Fatal(err)
	}
	start, _ := spinetest.Start("alices").Marshal()
	var resp json.RawMessage
	if err := ca.do(context.Background(), http.MethodPost, "/v1/ingest", append(append([]byte("["), start...), ']'), &resp); err != nil {
		t.Fatal(err)
	}
	waitIdle(t, n)
	for _, name := range []string{"1-refused.jsonl", "2-dropped.jsonl"} {
		writeSpoolFile(t, filepath.Join(dir, name), spinetest.Text("alices", 1, "bob's words"))
	}
	if _, err := capture(t, "spool", "--token", bob, "--drop", "2-dropped.jsonl"); err != nil {
		t.Fatalf("spine spool --drop: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "2-dropped.jsonl")); !os.IsNotExist(err) {
		t.Fatalf("dropped file still there (%v)", err)
	}
	for i := range maxRefusals {
		_, err := capture(t, "spool", "--token", bob)
		if exitCode(err) != notRecordedCode {
			t.Fatalf("spine spool %d: %v, want exit %d", i+1, err, notRecordedCode)
		}
		_, serr := os.Stat(filepath.Join(dir, "1-refused.jsonl"))
		if kept := serr == nil; kept != (i < maxRefusals-1) {
			t.Fatalf("after %d refusals the file is kept: %v", i+1, kept)
		}
	}
	if left, _ := spoolFiles(dir); len(left) != 0 {
		t.Fatalf("the spool still holds %v", left)
	}
}

// A resumed session whose earlier run's envelopes (its end) still wait in
// the spool is recorded as a continuation: spine run delivers the
// leftovers before it asks spine about its session, and waits for spine
// to show them. Here ingest answers 300 ms late; before, the resumed run
// asked while the leftovers were on their way, took the session as new,
// and its output went into the first run's session.
func TestRunResumeAfterLeftover(t *testing.T) {
	shortRetries(t)
	n, _ := testNode(t)
	addr := freeAddr(t)
	if _, err := capture(t, "run", "--quiet", "--url", "http://"+addr, "--bin", script(t, "cat "+fastFixture), "--", "hi"); err == nil {
		t.Fatal("spine run to no spine succeeded")
	}
	at := serveAt(t, addr, proxyFront(testSpine(), func(w http.ResponseWriter, r *http.Request) bool {
		if r.Method == http.MethodPost {
			time.Sleep(300 * time.Millisecond)
		}
		return false
	}))
	resumed := script(t, "sed -e 's/second model fast turn/resumed-run-text/' -e 's/standard turn/resumed-run-text/' "+fastFixture)
	if out, err := capture(t, "run", "--quiet", "--url", at, "--bin", resumed, "--", "hi"); err != nil {
		t.Fatalf("the resumed run: %v\n%s", err, out)
	}
	waitIdle(t, n)
	id := apps.SessionID("claude-code", "fa570000-aaaa-aaaa-aaaa-aaaaaaaaaaaa")
	if tr, err := capture(t, "read", "transcript", id); err != nil || strings.Contains(tr, "resumed-run-text") ||
		!strings.Contains(tr, "second model fast turn") {
		t.Fatalf("the first run's transcript: %v\n%s", err, tr)
	}
	var page struct {
		Sessions []struct{ ID string } `json:"sessions"`
	}
	if err := apiGet(t, "/v1/sessions", &page); err != nil || len(page.Sessions) != 2 {
		t.Fatalf("sessions %+v (%v), want the first run's and its continuation", page.Sessions, err)
	}
}

// A spool that fills mid-run and later has room again: spine holds every
// ingest while the app writes session A (kept) and B (no room: some of it
// not kept, counted); then spine takes A, which frees its bytes, and the
// app's session C is kept and delivered whole. spine run exits 75.
func TestRunSpoolFullThenRoom(t *testing.T) {
	n, _ := testNode(t)
	tmp := t.TempDir()
	release := make(chan struct{})
	var once sync.Once
	open := func() { once.Do(func() { close(release) }) }
	defer open()
	at := serveAt(t, freeAddr(t), proxyFront(testSpine(), func(w http.ResponseWriter, r *http.Request) bool {
		if r.Method == http.MethodPost {
			select {
			case <-release:
			case <-r.Context().Done():
				return true
			}
		}
		return false
	}))
	session := func(k string) string {
		return "sed s/aaaa-aaaa-aaaa-aaaaaaaaaaaa/" + k + "/g " + fastFixture
	}
	app := script(t, session("aaaa-aaaa-aaaa-aaaaaaaaaaaa")+"\nsleep 0.5\n"+session("bbbb-bbbb-bbbb-bbbbbbbbbbbb")+
		"\nsleep 1\necho > "+tmp+"/b\nwhile [ ! -e "+tmp+"/go ]; do sleep 0.05; done\n"+session("cccc-cccc-cccc-cccccccccccc"))
	errc := make(chan error, 1)
	go func() {
		_, err := capture(t, "run", "--quiet", "--url", at, "--spool-max", "2600", "--bin", app, "--", "hi")
		errc <- err
	}()
	waitFile(t, tmp+"/b", "\n")
	open()
	waitA := func() { // spine took A: its bytes are free
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			if status, _ := sessionStatusOK(apps.SessionID("claude-code", "fa570000-aaaa-aaaa-aaaa-aaaaaaaaaaaa")); status != "" {
				return
			}
		}
		st, err := sessionStatusOK(apps.SessionID("claude-code", "fa570000-aaaa-aaaa-aaaa-aaaaaaaaaaaa"))
		t.Fatalf("session A never recorded: %q %v", st, err)
	}
	waitA()
	if err := os.WriteFile(tmp+"/go", nil, 0o600); err != nil {
		t.Fatal(err)
	}
	err := <-errc
	var code appExit
	if !errors.As(err, &code) || code != notRecordedCode {
		t.Fatalf("spine run: %v, want exit %d (B not kept)", err, notRecordedCode)
	}
	waitIdle(t, n)
	if status, _ := sessionStatusOK(apps.SessionID("claude-code", "fa570000-cccc-cccc-cccc-cccccccccccc")); status != "done" {
		t.Fatalf("session C %q, want done: the spool had room again", status)
	}
}

// sessionStatusOK is a session's status through spine, "" when it has none.
func sessionStatusOK(id string) (string, error) {
	c, err := newClient("", "")
	if err != nil {
		return "", err
	}
	var s struct{ Status string }
	err = c.Do(context.Background(), http.MethodGet, "/v1/sessions/"+id, nil, &s)
	return s.Status, err
}

// TestSpoolWriteAtomicMode: writeFileAtomic's file (FILE.meta, FILE.sent,
// the runner's login) is the user's alone even when an earlier FILE.tmp
// was left readable by others.
func TestSpoolWriteAtomicMode(t *testing.T) {
	path := filepath.Join(t.TempDir(), "runner.json")
	if err := os.WriteFile(path+".tmp", []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path+".tmp", 0o644); err != nil { // past the umask
		t.Fatal(err)
	}
	if err := writeFileAtomic(path, []byte("new")); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("%s: %v %v, want mode 0600", path, fi.Mode(), err)
	}
	if b, _ := os.ReadFile(path); string(b) != "new" {
		t.Fatalf("%s holds %q", path, b)
	}
}

// TestSpoolLockError: a spool file locked by another process is errBusy
// (passed over), and a file system without locks says so and what to do,
// not "delivered by another process".
func TestSpoolLockError(t *testing.T) {
	if err := spoolLockError(syscall.EWOULDBLOCK); err != errBusy {
		t.Fatalf("EWOULDBLOCK: %v, want errBusy", err)
	}
	for _, errno := range []syscall.Errno{syscall.ENOTSUP, syscall.EOPNOTSUPP, syscall.ENOLCK} {
		err := spoolLockError(errno)
		if errors.Is(err, errBusy) || !strings.Contains(err.Error(), "does not support file locks") ||
			!strings.Contains(err.Error(), "--spool DIR") {
			t.Errorf("%v: %v", errno, err)
		}
	}
}
