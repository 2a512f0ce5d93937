package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spinehq/spine/streams"
)

// The runner's spool is its own directory, and a file of it spine refuses
// for who sent it (the start of a task the runner does not hold: 409
// task_not_held) is kept for a delivery that may write it, while a file
// whose envelope is refused for what it says (400) is passed over and
// removed, as before. Before, both were removed.
func TestRunnerSpoolKeepsRefused(t *testing.T) {
	r := newRunnerRig(t)
	path, _ := runnerCredsPath()
	creds, err := loadRunnerCreds(path)
	if err != nil {
		t.Fatal(err)
	}
	run, err := newRunner(r.config(nil), false, false)
	if err != nil {
		t.Fatal(err)
	}
	if err := run.register(context.Background()); err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(os.Getenv("SPINE_SPOOL_DIR"), creds.RunnerID); run.spool != want {
		t.Fatalf("the runner's spool is %s, want %s", run.spool, want)
	}
	id := r.create(map[string]any{"instructions": "queued, never claimed"})
	task := r.read(id, "").Session.LatestTaskID
	now := time.Now().UTC()
	start := &streams.Envelope{V: 1, Type: streams.TypeSessionStart, ID: "held-start", At: now, SessionID: "held-session",
		App: "claude-code", Kind: "run", TaskID: task}
	chunk := &streams.Envelope{V: 1, Type: streams.TypeSessionChunk, ID: "held-chunk", At: now, SessionID: "held-session",
		Seq: 1, Stream: "stdout", Text: "hi"}
	bad := &streams.Envelope{V: 1, Type: streams.TypeSessionChunk, ID: "bad-chunk", At: now, SessionID: "bad-session",
		Seq: 1, Stream: "nowhere", Text: "hi"}
	writeSpoolFile(t, filepath.Join(run.spool, "1-held.jsonl"), start, chunk)
	writeSpoolFile(t, filepath.Join(run.spool, "2-bad.jsonl"), bad)
	res, err := sendLeftovers(context.Background(), run.c, run.spool, true, nil)
	left := res.left
	if len(left) != 1 || filepath.Base(left[0]) != "1-held.jsonl" || err == nil || !strings.Contains(err.Error(), "task_not_held") {
		t.Fatalf("delivered with %v, left %v; want the refused start's file kept (task_not_held)", err, left)
	}
	if _, err := os.Stat(filepath.Join(run.spool, "1-held.jsonl")); err != nil {
		t.Fatalf("the refused file: %v", err)
	}
	if _, err := os.Stat(filepath.Join(run.spool, "2-bad.jsonl")); !os.IsNotExist(err) {
		t.Fatalf("the file of a bad envelope is still there (%v)", err)
	}
	// spine spool with the member's token delivers what the runner's may not.
	if out, err := capture(t, "spool", "--spool", run.spool); err != nil {
		t.Fatalf("spine spool with the member's token: %v\n%s", err, out)
	}
	if left, _ := filepath.Glob(filepath.Join(run.spool, "*")); len(left) != 0 {
		t.Fatalf("the runner's spool still holds %v", left)
	}
}

func writeSpoolFile(t *testing.T, path string, envs ...*streams.Envelope) {
	t.Helper()
	var b []byte
	for _, e := range envs {
		data, err := e.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		b = append(append(b, data...), '\n')
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}
