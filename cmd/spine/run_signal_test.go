package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/spinehq/spine/apps"
	"github.com/spinehq/spine/internal/config"
	"github.com/spinehq/spine/streams"
)

var spineBin struct {
	once sync.Once
	path string
	err  error
}

// builtSpine is the spine binary, built once for the tests that signal
// spine run as a process of its own.
func builtSpine(t *testing.T) string {
	t.Helper()
	spineBin.once.Do(func() {
		dir, err := os.MkdirTemp("", "spine-bin")
		if err != nil {
			spineBin.err = err
			return
		}
		spineBin.path = filepath.Join(dir, "spine")
		out, err := exec.Command("go", "build", "-o", spineBin.path, ".").CombinedOutput()
		if err != nil {
			spineBin.err = errors.New(string(out))
		}
	})
	if spineBin.err != nil {
		t.Fatalf("go build: %v", spineBin.err)
	}
	return spineBin.path
}

// removeBuiltSpine removes what builtSpine built, after the tests.
func removeBuiltSpine() {
	if spineBin.path != "" {
		_ = os.RemoveAll(filepath.Dir(spineBin.path))
	}
}

// script is an executable bash script holding body.
func script(t *testing.T, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "app")
	if err := os.WriteFile(path, []byte("#!/bin/bash\n"+body+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

// waitFile waits until the file at path holds want.
func waitFile(t *testing.T, path, want string) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
		if b, _ := os.ReadFile(path); strings.Contains(string(b), want) {
			return
		}
		if time.Now().After(deadline) {
			b, _ := os.ReadFile(path)
			t.Fatalf("%s never held %q:\n%s", path, want, b)
		}
	}
}

// exitStatus waits for a started spine run and returns its wait status.
func exitStatus(t *testing.T, cmd *exec.Cmd) syscall.WaitStatus {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(time.Minute):
		_ = cmd.Process.Kill()
		<-done
		t.Fatal("spine run did not exit")
	}
	return cmd.ProcessState.Sys().(syscall.WaitStatus)
}

// An app that ignores the signals it is passed: spine run passes SIGTERM
// as SIGTERM, and a second SIGTERM kills the app, so spine run exits
// (137, killed) instead of hanging. Before, the app got SIGINT once and
// spine run waited for it forever.
func TestRunSignalEscalates(t *testing.T) {
	_, _ = testNode(t)
	log := filepath.Join(t.TempDir(), "log")
	app := script(t, "trap 'echo TERM >> "+log+"' TERM\ntrap 'echo INT >> "+log+"' INT\necho ready >> "+log+
		"\nwhile :; do sleep 0.05; done")
	cmd := exec.Command(builtSpine(t), "run", "--quiet", "--bin", app, "--", "hi")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitFile(t, log, "ready")
	_ = cmd.Process.Signal(syscall.SIGTERM)
	waitFile(t, log, "TERM")
	_ = cmd.Process.Signal(syscall.SIGTERM)
	ws := exitStatus(t, cmd)
	if ws.ExitStatus() != 128+int(syscall.SIGKILL) {
		t.Fatalf("spine run exited %v, want 137 (the app killed)\n%s", ws, stderr.String())
	}
	if b, _ := os.ReadFile(log); strings.Contains(string(b), "INT") {
		t.Fatalf("the app got SIGINT for a SIGTERM:\n%s", b)
	}
}

// spine run | head: the reader of spine run's stdout goes away. spine run
// goes on (the app runs to its end, the session is recorded) and exits as
// the app did, instead of dying of SIGPIPE.
func TestRunStdoutClosed(t *testing.T) {
	_, caughtUp := testNode(t)
	app := script(t, "cat ../../../shared/fixtures/claude-stream-json/entireio-cli__stream_session_fast.jsonl\n"+
		"sleep 0.3\ncat ../../../shared/fixtures/claude-stream-json/entireio-cli__stream_session_fast.jsonl")
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	r.Close()
	cmd := exec.Command(builtSpine(t), "run", "--bin", app, "--", "hi")
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = w, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	ws := exitStatus(t, cmd)
	if ws.Signaled() || ws.ExitStatus() != 0 {
		t.Fatalf("spine run exited %v, want 0 as the app\n%s", ws, stderr.String())
	}
	caughtUp()
	if status, _ := sessionStatus(t, apps.SessionID("claude-code", "fa570000-aaaa-aaaa-aaaa-aaaaaaaaaaaa")); status == "running" || status == "" {
		t.Fatalf("session %q, want ended\n%s", status, stderr.String())
	}
}

// A child the app leaves behind holding its stdout (a background sleep)
// does not keep spine run waiting after the app exits.
func TestRunLeftoverChild(t *testing.T) {
	_, _ = testNode(t)
	pid := filepath.Join(t.TempDir(), "pid")
	app := script(t, "sleep 300 &\necho $! > "+pid+"\nexit 3")
	t.Cleanup(func() { // the sleep left behind
		if b, err := os.ReadFile(pid); err == nil {
			if n, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
				_ = syscall.Kill(n, syscall.SIGKILL)
			}
		}
	})
	cmd := exec.Command(builtSpine(t), "run", "--quiet", "--bin", app, "--", "hi")
	// stderr a file, not a pipe the test would wait for the sleep on
	stderr, err := os.Create(filepath.Join(t.TempDir(), "stderr"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if ws := exitStatus(t, cmd); ws.ExitStatus() != 3 {
		t.Fatalf("spine run exited %v, want the app's 3", ws)
	}
}

// flaky is a proxy to spine that answers the first fail posts to
// /v1/ingest 503 (fail -1: every one).
func flaky(t *testing.T, fail int) string {
	t.Helper()
	target, _ := url.Parse(os.Getenv(config.EnvURL))
	proxy := httputil.NewSingleHostReverseProxy(target)
	var mu sync.Mutex
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		refuse := r.URL.Path == "/v1/ingest" && fail != 0
		if refuse && fail > 0 {
			fail--
		}
		mu.Unlock()
		if refuse {
			http.Error(w, "try later", http.StatusServiceUnavailable)
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

const fastFixture = "../../../shared/fixtures/claude-stream-json/entireio-cli__stream_session_fast.jsonl"

// Spine failing twice (503) costs nothing: the envelopes are sent again
// and the whole session is recorded, where before the first failure
// dropped the rest of the session.
func TestRunRetriesTransient(t *testing.T) {
	_, caughtUp := testNode(t)
	app := script(t, "cat "+fastFixture)
	out, err := capture(t, "run", "--quiet", "--url", flaky(t, 2), "--bin", app, "--", "hi")
	if err != nil {
		t.Fatalf("spine run: %v\n%s", err, out)
	}
	caughtUp()
	id := apps.SessionID("claude-code", "fa570000-aaaa-aaaa-aaaa-aaaaaaaaaaaa")
	if status, _ := sessionStatus(t, id); status == "running" || status == "" {
		t.Fatalf("session %q, want ended", status)
	}
	if tr, err := capture(t, "read", "transcript", id); err != nil || !strings.Contains(tr, "standard") {
		t.Fatalf("transcript: %v\n%s", err, tr)
	}
}

// Spine never taking the run: spine run exits 75 though the app exited
// 0, and the output it saved (--save) records the session with spine
// import.
func TestRunNotRecorded(t *testing.T) {
	_, caughtUp := testNode(t)
	oldWait, oldFlush := maxTransientWait, flushGrace
	maxTransientWait, flushGrace = 500*time.Millisecond, 500*time.Millisecond // spine never takes it: given up on soon
	t.Cleanup(func() { maxTransientWait, flushGrace = oldWait, oldFlush })
	app := script(t, "cat "+fastFixture)
	save := filepath.Join(t.TempDir(), "out.jsonl")
	_, err := capture(t, "run", "--quiet", "--save", save, "--url", flaky(t, -1), "--bin", app, "--", "hi")
	var code appExit
	if !errors.As(err, &code) || code != notRecordedCode {
		t.Fatalf("spine run: %v, want exit %d", err, notRecordedCode)
	}
	saved, _ := os.ReadFile(save)
	want, _ := os.ReadFile(fastFixture)
	if !bytes.Equal(saved, want) {
		t.Fatalf("--save holds %d bytes, want the app's %d", len(saved), len(want))
	}
	if out, err := capture(t, "import", save); err != nil {
		t.Fatalf("import: %v\n%s", err, out)
	}
	caughtUp()
	if tr, err := capture(t, "read", "transcript", apps.SessionID("claude-code", "fa570000-aaaa-aaaa-aaaa-aaaaaaaaaaaa")); err != nil || !strings.Contains(tr, "standard") {
		t.Fatalf("transcript: %v\n%s", err, tr)
	}
}

// A secret in the prompt is not shown: the rendering and --json show the
// envelopes redacted, as spine keeps them.
func TestRunShowsRedacted(t *testing.T) {
	_, _ = testNode(t)
	secret := "sk-ant-api03-" + strings.Repeat("A", 40)
	app := script(t, "head -1 "+fastFixture+"\n"+`echo '{"type":"user","message":{"role":"user","content":"use `+secret+
		`"},"session_id":"fa570000-aaaa-aaaa-aaaa-aaaaaaaaaaaa"}'`+"\ntail -n +3 "+fastFixture)
	for _, mode := range []string{"--json", "--billing=metered"} {
		out, err := capture(t, "run", mode, "--bin", app, "--", "hi")
		if err != nil {
			t.Fatalf("spine run %s: %v\n%s", mode, err, out)
		}
		if strings.Contains(out, secret) {
			t.Fatalf("spine run %s shows the secret:\n%s", mode, out)
		}
	}
}

// A session spine already has (imported before) still shows on the
// terminal: the rendering follows the translation, not what is sent.
func TestRunShowsRecorded(t *testing.T) {
	_, caughtUp := testNode(t)
	if out, err := capture(t, "import", fastFixture); err != nil {
		t.Fatalf("import: %v\n%s", err, out)
	}
	caughtUp()
	out, err := capture(t, "run", "--bin", script(t, "cat "+fastFixture), "--", "hi")
	if err != nil || !strings.Contains(out, "standard turn") || !strings.Contains(out, "● done") {
		t.Fatalf("spine run: %v, want the run shown\n%s", err, out)
	}
}

// runApp, as spine runner calls it: the start carries what Stamp sets
// (a taskId), and the result names the app's own session, its status,
// usage, model and the assistant's text since its last action.
func TestRunAppResult(t *testing.T) {
	_, caughtUp := testNode(t)
	c, err := newClient("", "")
	if err != nil {
		t.Fatal(err)
	}
	argv, format, _ := appArgs("claude-code", []string{"hi"})
	res, err := runApp(context.Background(), runSpec{Bin: script(t, "cat "+fastFixture), Argv: argv, Format: format, API: c,
		Stamp: func(e *streams.Envelope) {
			if e.Type == streams.TypeSessionStart {
				e.TaskID = "task-1"
			}
		}})
	id := apps.SessionID("claude-code", "fa570000-aaaa-aaaa-aaaa-aaaaaaaaaaaa")
	if err != nil || !res.Recorded || res.Code != 0 || res.Status != "done" || res.SessionID != id ||
		res.AppSessionID != "fa570000-aaaa-aaaa-aaaa-aaaaaaaaaaaa" || !strings.HasSuffix(strings.TrimSpace(res.Text), "second model fast turn") ||
		res.Usage.OutputTokens == 0 || res.Model == "" {
		t.Fatalf("runApp: %+v, %v", res, err)
	}
	caughtUp()
	out, err := capture(t, "read", "session", id, "--json")
	if err != nil || !strings.Contains(out, `"taskId":"task-1"`) {
		t.Fatalf("session: %v\n%s", err, out)
	}
}

// alive: the process runs (not gone, not a zombie left unreaped).
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	_, rest, _ := strings.Cut(string(b), ") ")
	return !strings.HasPrefix(rest, "Z")
}

// With no terminal (a service, the runner), the app leads a process group
// of its own: killing an app that ignores its signals kills what it
// started too (a tool's command). Before, the app alone was killed and
// its child ran on.
func TestRunKillsTheAppsGroup(t *testing.T) {
	_, _ = testNode(t)
	dir := t.TempDir()
	app := script(t, "trap 'echo TERM >> "+dir+"/log' TERM\nsleep 300 &\necho $! > "+dir+"/child\necho ready >> "+dir+
		"/log\nwhile :; do sleep 0.05; done")
	cmd := exec.Command(builtSpine(t), "run", "--quiet", "--bin", app, "--", "hi")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true} // no controlling terminal
	stderr, err := os.Create(filepath.Join(dir, "stderr"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitFile(t, dir+"/log", "ready")
	b, _ := os.ReadFile(dir + "/child")
	child, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Kill(child, syscall.SIGKILL) })
	_ = cmd.Process.Signal(syscall.SIGTERM)
	waitFile(t, dir+"/log", "TERM")
	_ = cmd.Process.Signal(syscall.SIGTERM)
	if ws := exitStatus(t, cmd); ws.ExitStatus() != 128+int(syscall.SIGKILL) {
		t.Fatalf("spine run exited %v, want 137 (the app killed)", ws)
	}
	for deadline := time.Now().Add(10 * time.Second); alive(child); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the app's child %d runs on after the app was killed", child)
		}
	}
}

// A signal after the app exited, while spine run still waits for spine to
// take the rest (here spine holds every ingest), abandons the wait: spine
// run exits 75 at once and the rest stays in the spool. Before, the signal
// was passed over and spine run waited its whole 10 s flush.
func TestRunSignalAbandonsTheFlush(t *testing.T) {
	_, _ = testNode(t)
	held := make(chan struct{})
	defer close(held)
	at := serveAt(t, freeAddr(t), http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			select {
			case <-held:
			case <-r.Context().Done():
			}
			return
		}
		http.Error(w, `{"error":{"code":"not_found","message":"session not found"}}`, http.StatusNotFound)
	}))
	done := filepath.Join(t.TempDir(), "done")
	app := script(t, "cat "+fastFixture+"\necho > "+done)
	cmd := exec.Command(builtSpine(t), "run", "--quiet", "--url", at, "--bin", app, "--", "hi")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitFile(t, done, "\n")
	time.Sleep(300 * time.Millisecond) // the app has exited; spine run waits for spine
	_ = cmd.Process.Signal(syscall.SIGINT)
	exited := make(chan syscall.WaitStatus, 1)
	go func() { exited <- exitStatus(t, cmd) }()
	select {
	case ws := <-exited:
		if ws.ExitStatus() != notRecordedCode || !strings.Contains(stderr.String(), "not waiting for spine") {
			t.Fatalf("spine run exited %v, want %d\n%s", ws, notRecordedCode, stderr.String())
		}
	case <-time.After(5 * time.Second): // well before the 10 s flush
		t.Fatalf("spine run still waits for spine after the signal\n%s", stderr.String())
	}
	if left, _ := filepath.Glob(filepath.Join(os.Getenv(config.EnvSpoolDir), "*.jsonl")); len(left) != 1 {
		t.Fatalf("the spool holds %v, want the run's file", left)
	}
}
