package main

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spinehq/spine/accounting"
	"github.com/spinehq/spine/apps"
	"github.com/spinehq/spine/importer"
	"github.com/spinehq/spine/internal/apprig"
	"github.com/spinehq/spine/internal/fakemodel"
)

// sessionOf reads GET /v1/sessions/{id} as spine read session --json shows it.
func sessionOf(t *testing.T, id string) map[string]any {
	t.Helper()
	out, err := capture(t, "read", "session", id, "--json")
	var s map[string]any
	if err != nil || json.Unmarshal([]byte(out), &s) != nil {
		t.Fatalf("read session %s: %v\n%s", id, err, out)
	}
	return s
}

// sessionIfRecorded is sessionOf, or nil while spine has no such session.
func sessionIfRecorded(t *testing.T, id string) map[string]any {
	t.Helper()
	out, err := capture(t, "read", "session", id, "--json")
	if err != nil && strings.Contains(err.Error(), "not_found") {
		return nil
	}
	var s map[string]any
	if err != nil || json.Unmarshal([]byte(out), &s) != nil {
		t.Fatalf("read session %s: %v\n%s", id, err, out)
	}
	return s
}

// spine run of a real Claude Code resuming a session a finished spine run
// recorded (claude -p --resume ID): the new process's part is a
// continuation, a new session with the same appSessionRef whose transcript
// and router-call row are the resumed run's alone (its own tokens, as the
// model served them, and the cost the new process reported); the first
// session is left as it was. spine import of both runs' output afterwards
// publishes nothing.
func TestRunResumedClaudeCode(t *testing.T) {
	n, caughtUp := testNode(t)
	srv := fakemodel.Start(t)
	srv.Anthropic(
		fakemodel.Turn{Blocks: []fakemodel.Block{fakemodel.Text("first-run-text")},
			Usage: fakemodel.Usage{Input: 12, Output: 40, CacheRead: 5000, CacheWrite5m: 700}},
		fakemodel.Turn{Blocks: []fakemodel.Block{fakemodel.Text("resumed-run-text")},
			Usage: fakemodel.Usage{Input: 3, Output: 9, CacheRead: 5700, CacheWrite1h: 80}},
	)
	c := apprig.NewClaude(t, srv, nil)
	dir := t.TempDir()
	runOnce := func(name string, args ...string) []byte {
		t.Helper()
		output := filepath.Join(dir, name)
		bin := appWrapper(t, c.Bin, c.Dir, c.Env(), output)
		if out, err := capture(t, append([]string{"run", "--quiet", "--bin", bin, "--"}, args...)...); err != nil {
			t.Fatalf("spine run: %v\n%s", err, out)
		}
		raw, err := os.ReadFile(output)
		if err != nil {
			t.Fatal(err)
		}
		return raw
	}
	first := runOnce("first.jsonl", "say one")
	appID, _ := firstValue(first, "session_id").(string)
	if appID == "" {
		t.Fatalf("the first run names no session:\n%s", first)
	}
	id := apps.SessionID("claude-code", appID)
	caughtUp()
	base := sessionOf(t, id)
	if base["endedAt"] == nil {
		t.Fatalf("the first run's session did not end: %v", base)
	}
	firstCall := routerCall(t, n, id)

	resumed := runOnce("resumed.jsonl", "say two", "--resume", appID)
	if got, _ := firstValue(resumed, "session_id").(string); got != appID {
		t.Fatalf("claude --resume ran session %q, want %q", got, appID)
	}
	caughtUp()
	cont := apps.ContinuationID("claude-code", appID, int64(base["lastSeq"].(float64)), 0)
	s := sessionOf(t, cont)
	if s["appSessionRef"] != appID || s["endedAt"] == nil || s["kind"] != "run" {
		t.Fatalf("continuation %s: %v", cont, s)
	}
	out, err := capture(t, "read", "transcript", cont)
	if err != nil || !strings.Contains(out, "resumed-run-text") || strings.Contains(out, "first-run-text") {
		t.Fatalf("continuation transcript: %v\n%s", err, out)
	}
	log := srv.Log()
	if len(log) != 2 {
		t.Fatalf("the model served %+v", log)
	}
	u := servedUsage(log[1:])
	row := routerCall(t, n, cont)
	cost, _ := lastValue(resumed, "total_cost_usd").(float64)
	if row.tokens != *accounting.Normalise(&u) || row.cost == nil || *row.cost != cost {
		t.Fatalf("continuation's router call %+v cost %v; the resumed run served %+v and reported %v", row.tokens, row.cost,
			*accounting.Normalise(&u), cost)
	}
	if again := routerCall(t, n, id); again.tokens != firstCall.tokens || *again.cost != *firstCall.cost {
		t.Fatalf("the first session's router call changed: %+v, was %+v", again, firstCall)
	}

	out, err = capture(t, "import", "--json", filepath.Join(dir, "first.jsonl"), filepath.Join(dir, "resumed.jsonl"))
	var sum importer.Summary
	if err != nil || json.Unmarshal([]byte(out), &sum) != nil {
		t.Fatalf("import: %v\n%s", err, out)
	}
	if sum.Envelopes != 0 {
		t.Fatalf("importing both runs' output after spine run published %d envelopes", sum.Envelopes)
	}
	var page struct {
		Sessions []struct{ ID string } `json:"sessions"`
	}
	if err := apiGet(t, "/v1/sessions", &page); err != nil || len(page.Sessions) != 2 {
		t.Fatalf("sessions %+v (%v), want the run and its continuation", page.Sessions, err)
	}
}

// apiGet is one GET of spine's API as the CLI's client makes it.
func apiGet(t *testing.T, path string, out any) error {
	t.Helper()
	c, err := newClient("", "")
	if err != nil {
		return err
	}
	return c.Do(context.Background(), http.MethodGet, path, nil, out)
}

// While spine run's app works, the session's usage so far is readable on
// it (session.usage): here the first response's input, its Bash call
// still waiting. At the end the row holds the end's usage, and the
// router-call row counts the model's tokens once.
func TestRunRunningUsage(t *testing.T) {
	n, caughtUp := testNode(t)
	srv := fakemodel.Start(t)
	c := apprig.NewClaude(t, srv, nil)
	gate := filepath.Join(c.Dir, "go")
	srv.Anthropic(
		fakemodel.Turn{Blocks: []fakemodel.Block{fakemodel.Text("waiting-for-go"),
			fakemodel.Tool("Bash", map[string]any{"command": "until [ -f " + gate + " ]; do sleep 0.05; done", "description": "wait"})},
			Usage: fakemodel.Usage{Input: 12, Output: 40, CacheRead: 5000, CacheWrite5m: 300}},
		fakemodel.Turn{Blocks: []fakemodel.Block{fakemodel.Text("went")},
			Usage: fakemodel.Usage{Input: 3, Output: 9, CacheRead: 5300}},
	)
	bin := appWrapper(t, c.Bin, c.Dir, c.Env(), "")
	t.Cleanup(func() { _ = os.WriteFile(gate, nil, 0o644) }) // lets the app finish should the test fail first
	done := make(chan error, 1)
	go func() {
		done <- run(context.Background(), []string{"run", "--quiet", "--bin", bin, "--", "wait", "--allowedTools", "Bash"})
	}()
	var id string
	u1 := servedUsage(srv.Log()) // nothing yet
	eventually(t, "the first response's usage on the running session", func() bool {
		if log := srv.Log(); len(log) > 0 {
			u1 = servedUsage(log[:1])
		}
		if id == "" {
			id = transcriptSession(c)
			return false
		}
		caughtUp()
		s := sessionIfRecorded(t, id) // spine run sends its start once it has read the app's session id
		if s == nil {
			return false
		}
		raw, _ := json.Marshal(s["tokens"])
		var tk *accounting.Tokens
		want := accounting.Normalise(&u1)
		return json.Unmarshal(raw, &tk) == nil && s["endedAt"] == nil && tk != nil && tk.Input == want.Input && tk.CacheRead == want.CacheRead
	})
	touch(t, gate)
	if err := <-done; err != nil {
		t.Fatalf("spine run: %v", err)
	}
	caughtUp()
	u := servedUsage(srv.Log())
	if row := routerCall(t, n, id); row.tokens != *accounting.Normalise(&u) {
		t.Fatalf("router call %+v, the model served %+v", row.tokens, *accounting.Normalise(&u))
	}
}
