package main

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spinehq/spine/accounting"
	"github.com/spinehq/spine/apps"
	"github.com/spinehq/spine/importer"
	"github.com/spinehq/spine/internal/apprig"
	"github.com/spinehq/spine/internal/checksum"
	"github.com/spinehq/spine/internal/fakemodel"
	"github.com/spinehq/spine/internal/spinetest"
	"github.com/spinehq/spine/node"
	"github.com/spinehq/spine/streams"
)

// appWrapper is a script spine run starts as the app (--bin): the real
// binary in dir with exactly env, its stdout also saved to log so the
// test can import the same output afterwards. With log "" the script
// becomes the app (exec), so a signal spine run sends reaches the app.
func appWrapper(t *testing.T, bin, dir string, env []string, log string) string {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "#!/bin/bash\nset -o pipefail\ncd '%s' || exit 1\n", dir)
	if log == "" {
		b.WriteString("exec ")
	}
	b.WriteString("env -i")
	for _, kv := range env {
		fmt.Fprintf(&b, " '%s'", kv)
	}
	fmt.Fprintf(&b, " '%s' \"$@\"", bin)
	if log != "" {
		fmt.Fprintf(&b, " | tee '%s'", log)
	}
	b.WriteString("\n")
	path := filepath.Join(t.TempDir(), "app")
	if err := os.WriteFile(path, []byte(b.String()), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

// servedUsage sums what the fake model served, in the app's buckets.
func servedUsage(log []fakemodel.Served) streams.Usage {
	var u streams.Usage
	for _, r := range log {
		u.Add(streams.Usage{InputTokens: r.Usage.Input, OutputTokens: r.Usage.Output, CacheReadTokens: r.Usage.CacheRead,
			CacheWriteTokens: r.Usage.CacheWrite5m + r.Usage.CacheWrite1h, ReasoningTokens: r.Usage.Reasoning})
	}
	return u
}

// callRow is a session's router-call row: its tokens, cost, status and billing.
type callRow struct {
	tokens          accounting.Tokens
	cost            *float64
	status, billing string
}

func routerCall(t *testing.T, n *node.Node, id string) callRow {
	t.Helper()
	var r callRow
	err := n.Pool.QueryRow(context.Background(), `SELECT input_tokens, output_tokens, cache_read_tokens,
		cache_write_tokens, reasoning_tokens, total_cost::float8, status, billing FROM router_calls WHERE session_id = $1`, id).
		Scan(&r.tokens.Input, &r.tokens.Output, &r.tokens.CacheRead, &r.tokens.CacheWrite, &r.tokens.Reasoning, &r.cost,
			&r.status, &r.billing)
	if err != nil {
		t.Fatalf("router call of %s: %v", id, err)
	}
	r.tokens.Total = r.tokens.Input + r.tokens.Output
	return r
}

// firstValue is the first value of key on the output's lines that have one.
func firstValue(out []byte, key string) any {
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		var l map[string]any
		if json.Unmarshal(sc.Bytes(), &l) == nil && l[key] != nil {
			return l[key]
		}
	}
	return nil
}

// lastValue is the last value of key on the output's lines that have one.
func lastValue(out []byte, key string) any {
	var v any
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		var l map[string]any
		if json.Unmarshal(sc.Bytes(), &l) == nil && l[key] != nil {
			v = l[key]
		}
	}
	return v
}

// checkRecorded reads the session through spine and compares it with the
// fake model's log: the transcript has the model's text, the steps its
// command, the router-call row the tokens it served, the cost the app
// reported and billing. Then importing the same output publishes nothing and changes
// no projection.
func checkRecorded(t *testing.T, n *node.Node, caughtUp func(), id string, log []fakemodel.Served,
	texts []string, command string, cost *float64, billing, output string) {
	t.Helper()
	if len(log) != 2 || log[0].Turn != 0 || log[1].Turn != 1 {
		t.Fatalf("the model served %+v, want the two scripted turns", log)
	}
	caughtUp()
	out, err := capture(t, "read", "transcript", id)
	for _, text := range texts {
		if err != nil || !strings.Contains(out, text) {
			t.Fatalf("transcript of %s, want %q: %v\n%s", id, text, err, out)
		}
	}
	if out, err = capture(t, "read", "steps", id, "--json"); err != nil || !strings.Contains(out, command) {
		t.Fatalf("steps of %s, want the command %q: %v\n%s", id, command, err, out)
	}
	u := servedUsage(log)
	want := *accounting.Normalise(&u)
	row := routerCall(t, n, id)
	if row.tokens != want || row.status != "done" || row.billing != billing {
		t.Fatalf("router call %+v, %s, billing %s; the model served %+v, billing should be %s", row.tokens, row.status,
			row.billing, want, billing)
	}
	if (row.cost == nil) != (cost == nil) || cost != nil && *row.cost != *cost {
		t.Fatalf("router call cost %v, the app reported %v", row.cost, cost)
	}
	before, err := checksum.Compute(context.Background(), n.Pool)
	if err != nil {
		t.Fatal(err)
	}
	out, err = capture(t, "import", "--json", output)
	var sum importer.Summary
	if err != nil || json.Unmarshal([]byte(out), &sum) != nil {
		t.Fatalf("import: %v\n%s", err, out)
	}
	if sum.Envelopes != 0 || sum.AlreadyRecorded != 1 {
		t.Fatalf("importing spine run's output again: %d envelopes, %d already recorded", sum.Envelopes, sum.AlreadyRecorded)
	}
	caughtUp()
	after, err := checksum.Compute(context.Background(), n.Pool)
	if err != nil {
		t.Fatal(err)
	}
	if d := checksum.Diff(before, after); len(d) != 0 {
		t.Fatalf("the import changed %v", d)
	}
}

// spine run of the real Claude Code against the fake model: the session
// is recorded as it runs and reads back as the model served it; the exit
// code is the app's.
func TestRunClaudeCode(t *testing.T) {
	n, caughtUp := testNode(t)
	srv := fakemodel.Start(t)
	srv.Anthropic(
		fakemodel.Turn{Blocks: []fakemodel.Block{fakemodel.Text("looking around"),
			fakemodel.Tool("Bash", map[string]any{"command": "echo live-run", "description": "say"})},
			Usage: fakemodel.Usage{Input: 12, Output: 40, CacheRead: 5000, CacheWrite5m: 700}},
		fakemodel.Turn{Blocks: []fakemodel.Block{fakemodel.Text("all done here")},
			Usage: fakemodel.Usage{Input: 3, Output: 9, CacheRead: 5700, CacheWrite1h: 80}},
	)
	c := apprig.NewClaude(t, srv, nil)
	output := filepath.Join(t.TempDir(), "claude.jsonl")
	bin := appWrapper(t, c.Bin, c.Dir, c.Env(), output)
	out, err := capture(t, "run", "--bin", bin, "--", "say something", "--allowedTools", "Bash")
	if err != nil {
		t.Fatalf("spine run: %v\n%s", err, out)
	}
	if !strings.Contains(out, "all done here") || !strings.Contains(out, "$ echo live-run") {
		t.Fatalf("spine run showed:\n%s", out)
	}
	raw, err := os.ReadFile(output)
	if err != nil {
		t.Fatal(err)
	}
	appID, _ := firstValue(raw, "session_id").(string)
	cost, ok := lastValue(raw, "total_cost_usd").(float64)
	if appID == "" || !ok {
		t.Fatalf("the app's output names no session or cost:\n%s", raw)
	}
	checkRecorded(t, n, caughtUp, apps.SessionID("claude-code", appID), srv.Log(),
		[]string{"looking around", "all done here"}, "echo live-run", &cost, "metered", output) // apiKeySource: the rig's key
}

// spine run of the real Codex: the same, with no cost (Codex reports none)
// and the billing --billing gives; --json prints the envelopes sent.
func TestRunCodex(t *testing.T) {
	n, caughtUp := testNode(t)
	srv := fakemodel.Start(t)
	srv.OpenAI(
		fakemodel.Turn{Blocks: []fakemodel.Block{fakemodel.Text("listing"),
			fakemodel.Tool("exec_command", map[string]any{"cmd": "echo live-run"})},
			Usage: fakemodel.Usage{Input: 900, CacheRead: 3000, Output: 40, Reasoning: 12}},
		fakemodel.Turn{Blocks: []fakemodel.Block{fakemodel.Text("codex is done")},
			Usage: fakemodel.Usage{Input: 50, CacheRead: 4400, Output: 5}},
	)
	c := apprig.NewCodex(t, srv, nil)
	output := filepath.Join(t.TempDir(), "codex.jsonl")
	bin := appWrapper(t, c.Bin, c.Dir, c.Env(t), output)
	out, err := capture(t, "run", "--app", "codex", "--billing", "subscription", "--json", "--bin", bin, "--",
		"--skip-git-repo-check", "--dangerously-bypass-approvals-and-sandbox", "say something")
	if err != nil {
		t.Fatalf("spine run: %v\n%s", err, out)
	}
	// --json shows each envelope sent: the start first, the end last.
	var sent []*streams.Envelope
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var e streams.Envelope
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("spine run --json printed %q: %v", line, err)
		}
		sent = append(sent, &e)
	}
	if len(sent) < 3 || sent[0].Type != streams.TypeSessionStart || sent[0].Owner != nil || sent[len(sent)-1].Type != streams.TypeSessionEnd ||
		!strings.Contains(out, "codex is done") {
		t.Fatalf("spine run --json showed:\n%s", out)
	}
	raw, err := os.ReadFile(output)
	if err != nil {
		t.Fatal(err)
	}
	thread, _ := firstValue(raw, "thread_id").(string)
	if thread == "" {
		t.Fatalf("the app's output names no thread:\n%s", raw)
	}
	checkRecorded(t, n, caughtUp, apps.SessionID("codex", thread), srv.Log(),
		[]string{"listing", "codex is done"}, "echo live-run", nil, "subscription", output)
}

// spine run --app codex without --billing stamps the session with the
// billing its thread's own rollout says (exec --json says none): a home
// signed in with ChatGPT is subscription, on the session and its
// router-call row; one with an API key stays unknown; --billing metered
// overrides the rollout.
func TestRunCodexBilling(t *testing.T) {
	n, caughtUp := testNode(t)
	srv := fakemodel.Start(t)
	cases := []struct {
		name    string
		chatGPT bool
		flags   []string
		want    string // the router-call row's billing, and the session's ("" for unknown)
	}{
		{"ChatGPT sign-in", true, nil, "subscription"},
		{"API key", false, nil, "unknown"},
		{"ChatGPT sign-in, --billing metered", true, []string{"--billing", "metered"}, "metered"},
	}
	var turns []fakemodel.Turn
	for range cases {
		turns = append(turns, fakemodel.Turn{Blocks: []fakemodel.Block{fakemodel.Text("billed")},
			Usage: fakemodel.Usage{Input: 100, CacheRead: 2000, Output: 5}})
	}
	srv.OpenAI(turns...)
	for _, c := range cases {
		codex := apprig.NewCodex(t, srv, &apprig.CodexOptions{ChatGPT: c.chatGPT})
		t.Setenv("CODEX_HOME", codex.Home) // the app's environment: spine run's
		output := filepath.Join(t.TempDir(), "codex.jsonl")
		bin := appWrapper(t, codex.Bin, codex.Dir, codex.Env(t), output)
		args := append([]string{"run", "--app", "codex", "--quiet", "--bin", bin}, c.flags...)
		out, err := capture(t, append(args, "--", "--skip-git-repo-check", "--dangerously-bypass-approvals-and-sandbox", "hello")...)
		if err != nil {
			t.Fatalf("%s: spine run: %v\n%s", c.name, err, out)
		}
		raw, _ := os.ReadFile(output)
		thread, _ := firstValue(raw, "thread_id").(string)
		if thread == "" || len(codex.Rollouts(t)) != 1 {
			t.Fatalf("%s: the app's output names no thread, or its home has %d rollouts:\n%s", c.name, len(codex.Rollouts(t)), raw)
		}
		id := apps.SessionID("codex", thread)
		caughtUp()
		out, err = capture(t, "read", "session", id, "--json")
		var s struct{ Status, Billing string }
		if err != nil || json.Unmarshal([]byte(out), &s) != nil {
			t.Fatalf("%s: read session %s: %v\n%s", c.name, id, err, out)
		}
		row := routerCall(t, n, id)
		if s.Status != "done" || cmp.Or(s.Billing, "unknown") != c.want || row.billing != c.want {
			t.Errorf("%s: session %s billing %q, router call billing %q; want %q", c.name, s.Status, s.Billing, row.billing, c.want)
		}
	}
}

// watcher is spine run's stdout in a test: it says when what it shows
// first holds a string.
type watcher struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	want string
	seen chan struct{}
}

// text is what was shown so far.
func (w *watcher) text() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

func (w *watcher) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	if w.seen != nil && strings.Contains(w.buf.String(), w.want) {
		close(w.seen)
		w.seen = nil
	}
	return len(p), nil
}

// sessionStatus is a session's status and error as spine read serves them.
func sessionStatus(t *testing.T, id string) (status, errText string) {
	t.Helper()
	out, err := capture(t, "read", "session", id, "--json")
	var s struct{ Status, Error string }
	if err != nil || json.Unmarshal([]byte(out), &s) != nil {
		t.Fatalf("read session %s: %v\n%s", id, err, out)
	}
	return s.Status, s.Error
}

// While the app runs (a Bash call sleeping), its session is running in
// spine and its transcript has what the model said so far. Stopping spine
// run then (Ctrl-C, SIGTERM: its context is cancelled) passes the signal
// to the app, which stops; the session ends cancelled, its router-call row
// says so, and spine run exits non-zero.
func TestRunCancelled(t *testing.T) {
	n, caughtUp := testNode(t)
	srv := fakemodel.Start(t)
	srv.Anthropic(fakemodel.Turn{Blocks: []fakemodel.Block{fakemodel.Text("going to sleep"),
		fakemodel.Tool("Bash", map[string]any{"command": "sleep 30", "description": "wait"})},
		Usage: fakemodel.Usage{Input: 12, Output: 40, CacheRead: 5000}})
	c := apprig.NewClaude(t, srv, nil)
	bin := appWrapper(t, c.Bin, c.Dir, c.Env(), "")
	w := &watcher{want: "going to sleep", seen: make(chan struct{})}
	seen := w.seen
	old := stdout
	stdout = w
	defer func() { stdout = old }()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- run(ctx, []string{"run", "--bin", bin, "--", "sleep", "--allowedTools", "Bash"}) }()
	select {
	case <-seen:
	case err := <-done:
		t.Fatalf("spine run ended before the app slept: %v\n%s", err, w.text())
	case <-time.After(time.Minute):
		t.Fatalf("the app never said it would sleep:\n%s", w.text())
	}
	// Before the app exits, spine has its start and the text it wrote.
	id := ""
	if sc := bufio.NewScanner(strings.NewReader(w.text())); sc.Scan() {
		id = strings.TrimPrefix(sc.Text(), "● claude-code session ")
	}
	for deadline := time.Now().Add(spinetest.WaitTimeout); ; time.Sleep(50 * time.Millisecond) {
		caughtUp()
		out, err := capture(t, "read", "transcript", id)
		if err == nil && strings.Contains(out, "going to sleep") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("transcript of %s while the app runs: %v\n%s", id, err, out)
		}
	}
	if status, _ := sessionStatus(t, id); status != "running" {
		t.Fatalf("session %s is %q while the app runs", id, status)
	}
	cancel()
	var err error
	select {
	case err = <-done:
	case <-time.After(time.Minute):
		t.Fatal("spine run did not stop within a minute of its signal")
	}
	stdout = old
	var code appExit
	if !errors.As(err, &code) || code == 0 {
		t.Fatalf("spine run: %v, want the app's non-zero exit\n%s", err, w.text())
	}
	caughtUp()
	if status, _ := sessionStatus(t, id); status != "cancelled" {
		t.Fatalf("session %s ended %q, want cancelled\n%s", id, status, w.text())
	}
	if row := routerCall(t, n, id); row.status != "cancelled" {
		t.Fatalf("router call status %q, want cancelled", row.status)
	}
}

// The app dying mid-run (Codex killed by a command it ran) ends the
// session failed, with the signal that killed it as its error.
func TestRunAppDies(t *testing.T) {
	_, caughtUp := testNode(t)
	srv := fakemodel.Start(t)
	srv.OpenAI(fakemodel.Turn{Blocks: []fakemodel.Block{fakemodel.Text("stopping myself"),
		fakemodel.Tool("exec_command", map[string]any{"cmd": "kill -9 $PPID"})},
		Usage: fakemodel.Usage{Input: 900, CacheRead: 3000, Output: 40}})
	c := apprig.NewCodex(t, srv, nil)
	output := filepath.Join(t.TempDir(), "codex.jsonl")
	bin := appWrapper(t, c.Bin, c.Dir, c.Env(t), output)
	out, err := capture(t, "run", "--app", "codex", "--bin", bin, "--", "--skip-git-repo-check",
		"--dangerously-bypass-approvals-and-sandbox", "stop")
	var code appExit
	if !errors.As(err, &code) || code == 0 {
		t.Fatalf("spine run: %v, want the app's non-zero exit\n%s", err, out)
	}
	raw, _ := os.ReadFile(output)
	thread, _ := firstValue(raw, "thread_id").(string)
	if thread == "" {
		t.Fatalf("the app's output names no thread:\n%s", raw)
	}
	caughtUp()
	status, why := sessionStatus(t, apps.SessionID("codex", thread))
	if status != "failed" || why == "" {
		t.Fatalf("session ended %q (%q), want failed with the app's error\n%s", status, why, out)
	}
}
