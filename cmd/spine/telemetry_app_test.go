package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spinehq/spine/accounting"
	"github.com/spinehq/spine/apps"
	"github.com/spinehq/spine/internal/apprig"
	"github.com/spinehq/spine/internal/config"
	"github.com/spinehq/spine/internal/fakemodel"
	"github.com/spinehq/spine/node"
	"github.com/spinehq/spine/recorder"
	"github.com/spinehq/spine/spine"
	"github.com/spinehq/spine/streams"
)

// The proof of issue 16 against the real apps (docs/telemetry.md, "The
// proof"): each test runs Claude Code or Codex with its own telemetry
// pointed at a real node and compares what spine made of it with the fake
// model's log and the app's own report.

// telemetryIdle is how long a test's telemetry session stays running
// without an envelope: long enough for an app's exports (every 0.5 s, the
// rig's), short enough that a test waits for the sweeper's end.
const telemetryIdle = 2 * time.Second

// telemetryNode is testNode whose telemetry sessions end after idle quiet
// (0 keeps the default, 10 min), with its URL and the CLI's member token.
func telemetryNode(t *testing.T, idle time.Duration) (*node.Node, func(), string, string) {
	t.Helper()
	n, caughtUp := testNodeWith(t, func(c *config.Config) { c.TelemetryIdle = idle })
	tok, _ := n.DevToken()
	return n, caughtUp, "http://" + n.HTTPAddr(), tok
}

// spineSession is spine read session ID --json; ok is false while spine
// has no such session.
func spineSession(t *testing.T, id string) (recorder.Session, bool) {
	t.Helper()
	var s recorder.Session
	out, err := capture(t, "read", "session", id, "--json")
	return s, err == nil && json.Unmarshal([]byte(out), &s) == nil
}

// awaitSession waits until spine's session id is as ok wants it.
func awaitSession(t *testing.T, id, what string, ok func(recorder.Session) bool) recorder.Session {
	t.Helper()
	var s recorder.Session
	eventually(t, what, func() bool {
		var found bool
		s, found = spineSession(t, id)
		return found && ok(s)
	})
	return s
}

// awaitCall waits for the session's router-call row (written at its end).
func awaitCall(t *testing.T, n *node.Node, id string) callRow {
	t.Helper()
	eventually(t, "the router-call row of "+id, func() bool {
		var one int
		return n.Pool.QueryRow(context.Background(), `SELECT 1 FROM router_calls WHERE session_id = $1`, id).Scan(&one) == nil
	})
	return routerCall(t, n, id)
}

// ledgered are the request ids accounting's and the recorder's ledgers
// hold for the session, each sorted.
func ledgered(t *testing.T, n *node.Node, id string) (accounting, recorder []string) {
	t.Helper()
	read := func(table string) []string {
		rows, err := n.Pool.Query(context.Background(),
			`SELECT request_id FROM `+table+` WHERE session_id = $1 ORDER BY request_id`, id)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var ids []string
		for rows.Next() {
			var s string
			if err := rows.Scan(&s); err != nil {
				t.Fatal(err)
			}
			ids = append(ids, s)
		}
		return ids
	}
	return read("router_call_requests"), read("session_requests")
}

// servedRequests are the request ids the fake model answered, sorted.
func servedRequests(log []fakemodel.Served) []string {
	var ids []string
	for _, r := range log {
		ids = append(ids, r.RequestID)
	}
	slices.Sort(ids)
	return ids
}

// servedTools are the tool calls' ids the fake model sent, in order.
func servedTools(log []fakemodel.Served) []string {
	var ids []string
	for _, r := range log {
		ids = append(ids, r.Tools...)
	}
	return ids
}

// stepsOf are the session's steps through spine read steps.
func stepsOf(t *testing.T, id string) []spine.Step {
	t.Helper()
	out, err := capture(t, "read", "steps", id, "--json")
	var page spine.StepsPage
	if err != nil || json.Unmarshal([]byte(out), &page) != nil {
		t.Fatalf("read steps %s: %v\n%s", id, err, out)
	}
	return page.Steps
}

// callIDs are the steps' call ids and actions, in order.
func callIDs(steps []spine.Step) (ids, actions []string) {
	for _, s := range steps {
		ids, actions = append(ids, s.CallID), append(actions, s.Action)
	}
	return ids, actions
}

// served is the fake model's log in spine's buckets, normalised as a
// router-call row's tokens.
func served(log []fakemodel.Served) accounting.Tokens {
	u := servedUsage(log)
	return *accounting.Normalise(&u)
}

// claudeResult is what claude -p --output-format json reports of a run.
type claudeResult struct {
	SessionID string  `json:"session_id"`
	TotalCost float64 `json:"total_cost_usd"`
	Usage     struct {
		Input      int64 `json:"input_tokens"`
		CacheWrite int64 `json:"cache_creation_input_tokens"`
		CacheRead  int64 `json:"cache_read_input_tokens"`
		Output     int64 `json:"output_tokens"`
	} `json:"usage"`
}

// tokens are the result's usage normalised as a router-call row's.
func (r claudeResult) tokens() accounting.Tokens {
	u := streams.Usage{InputTokens: r.Usage.Input, OutputTokens: r.Usage.Output, CacheReadTokens: r.Usage.CacheRead,
		CacheWriteTokens: r.Usage.CacheWrite}
	return *accounting.Normalise(&u)
}

// scriptToolRun scripts a Claude Code run that writes a file, cats it and
// says done: two tool uses in three requests.
func scriptToolRun(srv *fakemodel.Server, dir, prefix string) {
	u := func(n int64) fakemodel.Usage {
		return fakemodel.Usage{Input: 3 + n, Output: 30 * n, CacheRead: 11000 * n, CacheWrite5m: 800 + n, CacheWrite1h: 40}
	}
	srv.Anthropic(
		fakemodel.Turn{Match: fakemodel.MainThread, Usage: u(1), Blocks: []fakemodel.Block{fakemodel.Text(prefix + " writing"),
			fakemodel.Tool("Write", map[string]any{"file_path": filepath.Join(dir, "note.txt"), "content": "rig\n"})}},
		fakemodel.Turn{Match: fakemodel.MainThread, Usage: u(2), Blocks: []fakemodel.Block{
			fakemodel.Tool("Bash", map[string]any{"command": "cat note.txt", "description": "show the note"})}},
		fakemodel.Turn{Match: fakemodel.MainThread, Usage: u(3), Blocks: []fakemodel.Block{fakemodel.Text(prefix + " done")}},
	)
}

// The real Claude Code with its telemetry on (no hooks, no collector),
// once over http/json and once over http/protobuf, a run with two tool
// uses: spine has its session (claude-code, kind run, origin telemetry),
// which ends done once quiet (SPINE_TELEMETRY_IDLE); its router-call row's
// tokens by kind are the fake model's log and the app's own -p result,
// its cost the result's total_cost_usd; each request is one ledger row
// under its request id; its steps are the tool uses, each under its id.
func TestRealClaudeCodeTelemetry(t *testing.T) {
	n, _, url, tok := telemetryNode(t, telemetryIdle)
	for _, protocol := range []string{"http/json", "http/protobuf"} {
		t.Run(protocol, func(t *testing.T) {
			srv := fakemodel.Start(t)
			c := apprig.NewClaude(t, srv, &apprig.ClaudeOptions{
				Telemetry: &apprig.ClaudeTelemetry{URL: url, Protocol: protocol, Token: tok}})
			scriptToolRun(srv, c.Dir, protocol)
			run := c.Run("write, then cat a note", &apprig.RunOptions{Format: "json"})
			var res claudeResult
			if run.ExitCode != 0 || json.Unmarshal(run.Stdout, &res) != nil || res.SessionID == "" {
				t.Fatalf("claude exit %d\n%s\n%s", run.ExitCode, run.Stdout, run.Stderr)
			}
			log := srv.Log()
			id := apps.SessionID("claude-code", res.SessionID)
			s := awaitSession(t, id, "the telemetry session's end", func(s recorder.Session) bool { return s.Status == "done" })
			if s.App != "claude-code" || s.Kind != "run" || s.Origin != recorder.OriginTelemetry || s.AppSessionRef != res.SessionID {
				t.Errorf("session %+v", s)
			}
			row := awaitCall(t, n, id)
			if want := served(log); row.tokens != want || row.tokens != res.tokens() {
				t.Errorf("router call tokens %+v; the fake model served %+v, the app reported %+v", row.tokens, want, res.tokens())
			}
			if row.cost == nil || *row.cost != res.TotalCost || row.billing != "unknown" {
				t.Errorf("router call cost %v billing %s; the app reported %v", row.cost, row.billing, res.TotalCost)
			}
			acc, rec := ledgered(t, n, id)
			if want := servedRequests(log); !slices.Equal(acc, want) || !slices.Equal(rec, want) {
				t.Errorf("ledgered requests: accounting %v, recorder %v; the fake model served %v", acc, rec, want)
			}
			ids, actions := callIDs(stepsOf(t, id))
			if want := servedTools(log); !slices.Equal(ids, want) || s.RecordedSteps != len(want) {
				t.Errorf("steps %v (%v), recordedSteps %d; the tool uses were %v", ids, actions, s.RecordedSteps, want)
			}
		})
	}
}

// The real Codex with [otel] (protocol json, then binary), signed in with a
// provider's API key, a turn of two responses with a command: spine has its
// session (codex, kind run, origin telemetry, the machine its host.name),
// done once quiet; its
// router-call row's tokens are the fake model's log (Codex's input
// includes the cached part: spine's input bucket is without it), with no
// cost (Codex reports none) and billing unknown (an API key sends no
// auth_mode); one ledger row per response; the command is its one step.
func TestRealCodexTelemetry(t *testing.T) {
	n, _, url, tok := telemetryNode(t, telemetryIdle)
	for _, protocol := range []string{"json", "binary"} {
		t.Run(protocol, func(t *testing.T) {
			srv := fakemodel.Start(t)
			srv.OpenAI(
				fakemodel.Turn{Blocks: []fakemodel.Block{fakemodel.Thinking("look first"), fakemodel.Text("listing"),
					fakemodel.Tool("exec_command", map[string]any{"cmd": "echo hi"})},
					Usage: fakemodel.Usage{Input: 900, CacheRead: 3000, Output: 40, Reasoning: 12}},
				fakemodel.Turn{Blocks: []fakemodel.Block{fakemodel.Text("done")},
					Usage: fakemodel.Usage{Input: 50, CacheRead: 3900, Output: 5}},
			)
			c := apprig.NewCodex(t, srv, &apprig.CodexOptions{
				Telemetry: &apprig.CodexTelemetry{URL: url, Protocol: protocol, Token: tok}})
			run := c.Exec(t, "say hi")
			if run.ExitCode != 0 || run.ThreadID == "" {
				t.Fatalf("codex exit %d, thread %q\n%s", run.ExitCode, run.ThreadID, run.Stderr)
			}
			log := srv.Log()
			id := apps.SessionID("codex", run.ThreadID)
			s := awaitSession(t, id, "the telemetry session's end", func(s recorder.Session) bool { return s.Status == "done" })
			host, _ := os.Hostname()
			if s.App != "codex" || s.Kind != "run" || s.Origin != recorder.OriginTelemetry || s.AppSessionRef != run.ThreadID ||
				s.WorkerID != streams.MachineID(host) {
				t.Errorf("session %+v; the machine is %s", s, host)
			}
			row := awaitCall(t, n, id)
			if want := served(log); row.tokens != want || row.cost != nil || row.billing != "unknown" {
				t.Errorf("router call tokens %+v, cost %v, billing %s; the fake model served %+v", row.tokens, row.cost, row.billing, want)
			}
			if acc, rec := ledgered(t, n, id); len(acc) != len(log) || !slices.Equal(acc, rec) {
				t.Errorf("ledgered requests: accounting %v, recorder %v; the fake model served %d", acc, rec, len(log))
			}
			ids, actions := callIDs(stepsOf(t, id))
			if want := servedTools(log); !slices.Equal(ids, want) || s.RecordedSteps != len(want) {
				t.Errorf("steps %v (%v), recordedSteps %d; the tool calls were %v", ids, actions, s.RecordedSteps, want)
			}
		})
	}
}

// The real Claude Code with http hooks only (no telemetry, no collector):
// while a model response is held mid-stream after a first command, spine
// shows the session running with that command as its step (its output
// included); once released the second command's step follows, SessionEnd
// ends the session done, and its router-call row says no tokens and no
// cost (null: no hook carries them).
func TestRealClaudeCodeHooks(t *testing.T) {
	n, _, url, tok := telemetryNode(t, 0)
	srv := fakemodel.Start(t)
	hold := fakemodel.NewHold()
	srv.Anthropic(
		fakemodel.Turn{Match: fakemodel.MainThread, Usage: fakemodel.Usage{Input: 4, Output: 20, CacheRead: 9000},
			Blocks: []fakemodel.Block{fakemodel.Text("hooked one"),
				fakemodel.Tool("Bash", map[string]any{"command": "echo hook-one", "description": "one"})}},
		fakemodel.Turn{Match: fakemodel.MainThread, Usage: fakemodel.Usage{Input: 5, Output: 20, CacheRead: 9100},
			Hold: hold, HoldAfter: 1, Blocks: []fakemodel.Block{fakemodel.Text("hooked two"),
				fakemodel.Tool("Bash", map[string]any{"command": "echo hook-two", "description": "two"})}},
		fakemodel.Turn{Match: fakemodel.MainThread, Usage: fakemodel.Usage{Input: 6, Output: 5, CacheRead: 9200},
			Blocks: []fakemodel.Block{fakemodel.Text("hooked done")}},
	)
	c := apprig.NewClaude(t, srv, &apprig.ClaudeOptions{Hooks: &apprig.ClaudeHooks{URL: url, Token: tok}})
	ran := make(chan *apprig.ClaudeRun, 1)
	go func() { ran <- c.Run("run two commands", nil) }()
	defer hold.Release()
	select {
	case <-hold.Reached():
	case <-time.After(2 * time.Minute):
		t.Fatal("the second response was never asked for")
	}
	var id string
	eventually(t, "the transcript", func() bool { id = transcriptSession(c); return id != "" })
	s := awaitSession(t, id, "the first command's step", func(s recorder.Session) bool { return s.RecordedSteps == 1 })
	steps := stepsOf(t, id)
	if s.Status != "running" || s.Origin != recorder.OriginTelemetry || steps[0].Action != "command" ||
		!strings.Contains(string(steps[0].Detail), "echo hook-one") || !strings.Contains(observed(steps[0]), "hook-one") {
		t.Fatalf("while held: session %+v, steps %+v", s, steps)
	}
	hold.Release()
	run := <-ran
	if run.ExitCode != 0 {
		t.Fatalf("claude exit %d\n%s", run.ExitCode, run.Stderr)
	}
	s = awaitSession(t, id, "SessionEnd's end", func(s recorder.Session) bool { return s.Status == "done" })
	ids, actions := callIDs(stepsOf(t, id))
	if want := servedTools(srv.Log()); !slices.Equal(ids, want) || s.RecordedSteps != len(want) ||
		!slices.Equal(actions, []string{"command", "command"}) {
		t.Errorf("steps %v (%v), recordedSteps %d; the tool uses were %v", ids, actions, s.RecordedSteps, want)
	}
	var unknown bool
	eventually(t, "the router-call row", func() bool {
		return n.Pool.QueryRow(context.Background(), `SELECT input_tokens IS NULL AND output_tokens IS NULL
			AND total_cost IS NULL FROM router_calls WHERE session_id = $1`, id).Scan(&unknown) == nil
	})
	if !unknown {
		t.Errorf("router call of %s has tokens or a cost: no hook carries them", id)
	}
}

// observed is a step's observations' bodies, for a look at what they hold.
func observed(s spine.Step) string {
	var b strings.Builder
	for _, o := range s.Observations {
		b.Write(o.Body)
	}
	return b.String()
}

// The same real Claude Code run captured by its telemetry and by spine
// collect is one session, counted once, whichever reaches spine first.
//
// Collector first: Claude Code exports its logs every 5 s (its default,
// set here), so the collector's start, made from the transcript's first
// lines, comes first; the test holds the second model response until
// spine has the session as the collector's (kind attach).
//
// Telemetry first (the usual order: the rig's 500 ms export, or a
// collector started later): the collector starts only once spine has the
// session as the telemetry made it (kind run, origin telemetry) with the
// first tool use as its step, while the second response is held. The
// collector takes it for no door's (not spine run's, whose kind it
// shares): it sends its start, which the recorder and accounting apply
// over the telemetry's, and its chunks and end.
//
// Either way spine has one session of the app's id, the collector's
// (origin ”), done at the collector's end, with the run's text and its
// transcript file; its router-call row's tokens are the fake model's
// log, not twice it (the telemetry's requests are ledgered, not
// counted); its steps are the tool uses, once each (the telemetry
// first, the start deleted the telemetry's step of the first: the
// collector records it again).
func TestRealClaudeCodeTelemetryAndCollect(t *testing.T) {
	n, caughtUp, url, tok := telemetryNode(t, 0)
	for _, order := range []struct {
		name           string
		telemetryFirst bool
		env            []string
	}{
		{"collector first", false, []string{"OTEL_LOGS_EXPORT_INTERVAL=5000"}},
		{"telemetry first", true, nil},
	} {
		t.Run(order.name, func(t *testing.T) {
			telemetryAndCollect(t, n, caughtUp, &apprig.ClaudeTelemetry{URL: url, Protocol: "http/protobuf", Token: tok,
				Env: order.env}, order.telemetryFirst)
		})
	}
}

// telemetryAndCollect is one order of TestRealClaudeCodeTelemetryAndCollect.
func telemetryAndCollect(t *testing.T, n *node.Node, caughtUp func(), tel *apprig.ClaudeTelemetry, telemetryFirst bool) {
	srv := fakemodel.Start(t)
	c := apprig.NewClaude(t, srv, &apprig.ClaudeOptions{Telemetry: tel})
	hold := fakemodel.NewHold()
	u := func(n int64) fakemodel.Usage {
		return fakemodel.Usage{Input: 2 + n, Output: 25 * n, CacheRead: 10000 * n, CacheWrite5m: 600 + n}
	}
	srv.Anthropic(
		fakemodel.Turn{Match: fakemodel.MainThread, Usage: u(1), Blocks: []fakemodel.Block{fakemodel.Text("both writing"),
			fakemodel.Tool("Write", map[string]any{"file_path": filepath.Join(c.Dir, "note.txt"), "content": "rig\n"})}},
		fakemodel.Turn{Match: fakemodel.MainThread, Usage: u(2), Hold: hold, Blocks: []fakemodel.Block{
			fakemodel.Tool("Bash", map[string]any{"command": "cat note.txt", "description": "show the note"})}},
		fakemodel.Turn{Match: fakemodel.MainThread, Usage: u(3), Blocks: []fakemodel.Block{fakemodel.Text("both done")}},
	)
	claudeDir, state := filepath.Join(c.Home, ".claude"), filepath.Join(t.TempDir(), "state.json")
	var col *collector
	if !telemetryFirst {
		col = startCollector(t, claudeDir, state)
	}
	ran := make(chan *apprig.ClaudeRun, 1)
	go func() { ran <- c.Run("write, then cat a note", nil) }()
	defer hold.Release()
	<-hold.Reached()
	var id string
	eventually(t, "the transcript", func() bool { id = transcriptSession(c); return id != "" })
	if telemetryFirst {
		awaitSession(t, id, "the telemetry's session with the first tool use", func(s recorder.Session) bool {
			return s.Origin == recorder.OriginTelemetry && s.RecordedSteps == 1
		})
		col = startCollector(t, claudeDir, state)
	}
	awaitSession(t, id, "the collector's start", func(s recorder.Session) bool { return s.Kind == "attach" })
	hold.Release()
	run := <-ran
	if run.ExitCode != 0 {
		t.Fatalf("claude exit %d\n%s", run.ExitCode, run.Stderr)
	}
	log := srv.Log()
	eventually(t, "the telemetry's requests", func() bool { acc, _ := ledgered(t, n, id); return len(acc) == len(log) })
	eventually(t, "the last text through spine", func() bool { return spineHas(t, id, "both done") })
	col.stop(t)
	if out, err := capture(t, "collect", "--once", "--idle", "1ms", "--claude-dir", claudeDir, "--codex-dir", "",
		"--state", state); err != nil {
		t.Fatalf("collect --once: %v\n%s", err, out)
	}
	caughtUp()
	s, _ := spineSession(t, id)
	var sessions int
	if err := n.Pool.QueryRow(context.Background(), `SELECT count(*) FROM sessions WHERE app_session_ref = $1`,
		run.SessionID).Scan(&sessions); err != nil || sessions != 1 || s.Status != "done" || s.Origin != "" ||
		s.Kind != "attach" || s.TranscriptFileID == "" {
		t.Fatalf("%d sessions of the app's; spine's: %+v (%v)", sessions, s, err)
	}
	if row := routerCall(t, n, id); row.tokens != served(log) {
		t.Errorf("router call tokens %+v; the fake model served %+v", row.tokens, served(log))
	}
	if acc, _ := ledgered(t, n, id); !slices.Equal(acc, servedRequests(log)) {
		t.Errorf("ledgered requests %v; the fake model served %v", acc, servedRequests(log))
	}
	if _, actions := callIDs(stepsOf(t, id)); s.RecordedSteps != len(servedTools(log)) ||
		!slices.Equal(actions, []string{"file_write", "command"}) {
		t.Errorf("steps %v, recordedSteps %d; the tool uses were %v", actions, s.RecordedSteps, servedTools(log))
	}
}
