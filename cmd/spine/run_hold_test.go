package main

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/spinehq/spine/internal/apprig"
	"github.com/spinehq/spine/internal/config"
	"github.com/spinehq/spine/internal/fakemodel"
	"github.com/spinehq/spine/internal/spinetest"
)

// transcriptNow is the session's transcript as GET
// /v1/sessions/{id}/transcript serves it now.
func transcriptNow(t *testing.T, id string) string {
	t.Helper()
	c, err := newClient(os.Getenv(config.EnvURL), os.Getenv(config.EnvToken))
	if err != nil {
		t.Fatal(err)
	}
	var raw []byte
	var out json.RawMessage
	if err := c.do(context.Background(), http.MethodGet, "/v1/sessions/"+id+"/transcript", nil, &out); err == nil {
		raw = out
	}
	return string(raw)
}

// The fake model holds the app's response open mid-stream, its first
// text block sent and the rest not: while the app waits for the rest,
// spine already serves that text in the session's transcript (GET
// /v1/sessions/{id}/transcript), and the session is running. Released,
// the app finishes and the session ends done with the rest. Claude Code
// and Codex.
func TestRunHeldResponse(t *testing.T) {
	t.Run("claude-code", func(t *testing.T) {
		srv := fakemodel.Start(t)
		hold := fakemodel.NewHold()
		srv.Anthropic(
			fakemodel.Turn{Blocks: []fakemodel.Block{fakemodel.Text("the first half, streamed"),
				fakemodel.Tool("Bash", map[string]any{"command": "echo held-run", "description": "say"})},
				Usage: fakemodel.Usage{Input: 12, Output: 40, CacheRead: 5000}, Hold: hold, HoldAfter: 1},
			fakemodel.Turn{Blocks: []fakemodel.Block{fakemodel.Text("released and done")},
				Usage: fakemodel.Usage{Input: 3, Output: 9, CacheRead: 5100}},
		)
		c := apprig.NewClaude(t, srv, nil)
		heldRun(t, hold, "claude-code", appWrapper(t, c.Bin, c.Dir, c.Env(), ""), "go", "--allowedTools", "Bash")
	})
	t.Run("codex", func(t *testing.T) {
		srv := fakemodel.Start(t)
		hold := fakemodel.NewHold()
		srv.OpenAI(
			fakemodel.Turn{Blocks: []fakemodel.Block{fakemodel.Text("the first half, streamed"),
				fakemodel.Tool("exec_command", map[string]any{"cmd": "echo held-run"})},
				Usage: fakemodel.Usage{Input: 900, CacheRead: 3000, Output: 40}, Hold: hold, HoldAfter: 1},
			fakemodel.Turn{Blocks: []fakemodel.Block{fakemodel.Text("released and done")},
				Usage: fakemodel.Usage{Input: 50, CacheRead: 4400, Output: 5}},
		)
		c := apprig.NewCodex(t, srv, nil)
		heldRun(t, hold, "codex", appWrapper(t, c.Bin, c.Dir, c.Env(t), ""), "--skip-git-repo-check",
			"--dangerously-bypass-approvals-and-sandbox", "go")
	})
}

// heldRun runs app under spine run while the model holds its first
// response and checks the partial transcript through spine.
func heldRun(t *testing.T, hold *fakemodel.Hold, app, bin string, args ...string) {
	t.Helper()
	_, caughtUp := testNode(t)
	w := &watcher{want: "● " + app + " session ", seen: make(chan struct{})}
	seen := w.seen
	old := stdout
	stdout = w
	defer func() { stdout = old }()
	done := make(chan error, 1)
	go func() {
		done <- run(context.Background(), append([]string{"run", "--app", app, "--bin", bin, "--"}, args...))
	}()
	defer hold.Release()
	select {
	case <-hold.Reached():
	case err := <-done:
		t.Fatalf("spine run ended before the model held its response: %v\n%s", err, w.text())
	case <-time.After(time.Minute):
		t.Fatalf("the model never held its response:\n%s", w.text())
	}
	select {
	case <-seen:
	case <-time.After(time.Minute):
		t.Fatalf("spine run showed no session start:\n%s", w.text())
	}
	id := ""
	if sc := bufio.NewScanner(strings.NewReader(w.text())); sc.Scan() {
		id = strings.TrimPrefix(sc.Text(), "● "+app+" session ")
	}
	for deadline := time.Now().Add(spinetest.WaitTimeout); ; time.Sleep(50 * time.Millisecond) {
		caughtUp()
		if strings.Contains(transcriptNow(t, id), "the first half, streamed") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the partial transcript of %s never had the first block:\n%s\nshown:\n%s", id, transcriptNow(t, id), w.text())
		}
	}
	if strings.Contains(transcriptNow(t, id), "released and done") {
		t.Fatal("the transcript has the rest before the release")
	}
	if status, _ := sessionStatus(t, id); status != "running" {
		t.Fatalf("session %s is %q while the response is held", id, status)
	}
	hold.Release()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("spine run: %v\n%s", err, w.text())
		}
	case <-time.After(time.Minute):
		t.Fatal("spine run did not end after the release")
	}
	stdout = old
	caughtUp()
	if !strings.Contains(transcriptNow(t, id), "released and done") {
		t.Fatalf("transcript after the release:\n%s", transcriptNow(t, id))
	}
	if status, _ := sessionStatus(t, id); status != "done" {
		t.Fatalf("session %s ended %q", id, status)
	}
}
