package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spinehq/spine/apps"
	"github.com/spinehq/spine/internal/apprig"
	"github.com/spinehq/spine/internal/fakemodel"
	"github.com/spinehq/spine/internal/spinetest"
	"github.com/spinehq/spine/node"
)

// collector is `spine collect` running in the test until stop.
type collector struct {
	cancel context.CancelFunc
	done   chan error
}

func startCollector(t *testing.T, claudeDir, state string) *collector {
	t.Helper()
	return startCollectorArgs(t, "--claude-dir", claudeDir, "--codex-dir", "", "--state", state)
}

func startCollectorArgs(t *testing.T, args ...string) *collector {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	c := &collector{cancel: cancel, done: make(chan error, 1)}
	go func() { c.done <- run(ctx, append([]string{"collect"}, args...)) }()
	t.Cleanup(cancel)
	return c
}

// stop cancels the collector, as a SIGTERM would, and waits for it.
func (c *collector) stop(t *testing.T) {
	t.Helper()
	c.cancel()
	if err := <-c.done; err != nil {
		t.Fatalf("collect: %v", err)
	}
}

// eventually polls until ok or spinetest.WaitTimeout.
func eventually(t *testing.T, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(spinetest.WaitTimeout)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// scriptPausedTurns scripts the fake model for a Claude Code session of
// three turns saying PREFIX-marker-one, -two and -three, the first two
// each paused inside its own Bash call until the test creates go1, then
// go2, in c.Dir. Turn i's usage is u with Input+i, Output*i, CacheRead*i
// and CacheWrite5m+i.
func scriptPausedTurns(srv *fakemodel.Server, c *apprig.Claude, prefix string, u fakemodel.Usage) {
	gate := func(name string) string {
		return fmt.Sprintf("until [ -f %s ]; do sleep 0.05; done; echo passed-%s", filepath.Join(c.Dir, name), name)
	}
	turn := func(i int64, blocks ...fakemodel.Block) fakemodel.Turn {
		return fakemodel.Turn{Blocks: blocks, Match: fakemodel.MainThread,
			Usage: fakemodel.Usage{Input: u.Input + i, Output: u.Output * i, CacheRead: u.CacheRead * i, CacheWrite5m: u.CacheWrite5m + i}}
	}
	srv.Anthropic(
		turn(1, fakemodel.Text(prefix+"-marker-one"), fakemodel.Tool("Bash", map[string]any{"command": gate("go1"), "description": "wait"})),
		turn(2, fakemodel.Text(prefix+"-marker-two"), fakemodel.Tool("Bash", map[string]any{"command": gate("go2"), "description": "wait"})),
		turn(3, fakemodel.Text(prefix+"-marker-three")),
	)
}

// A real Claude Code session, paused twice inside its own Bash calls (each
// waits for a file the test creates), is collected while it runs: what it
// wrote becomes readable through spine while it is still running; the
// collector is stopped mid-session, the app writes more while none runs,
// and a new collector catches up and follows it to the end. The log then
// holds exactly the translation's envelopes but the end, each once, and a
// spine import of the same transcript publishes only the end.
func TestCollectRealClaudeSession(t *testing.T) {
	n, caughtUp := testNode(t)
	srv := fakemodel.Start(t)
	c := apprig.NewClaude(t, srv, nil)
	scriptPausedTurns(srv, c, "collected", fakemodel.Usage{Input: 3, Output: 20, CacheRead: 9000, CacheWrite5m: 500})
	claudeDir := filepath.Join(c.Home, ".claude")
	state := filepath.Join(t.TempDir(), "state.json")
	ran := make(chan *apprig.ClaudeRun, 1)

	col := startCollector(t, claudeDir, state)
	go func() { ran <- c.Run("work in three steps", nil) }()
	var id string
	eventually(t, "the first turn through spine", func() bool {
		if id == "" {
			id = transcriptSession(c)
		}
		return id != "" && spineHas(t, id, "collected-marker-one")
	})
	col.stop(t)

	touch(t, filepath.Join(c.Dir, "go1"))
	eventually(t, "the second turn on disk", func() bool { return onDisk(c, "collected-marker-two") })
	col = startCollector(t, claudeDir, state)
	eventually(t, "the second turn through spine", func() bool { return spineHas(t, id, "collected-marker-two") })
	touch(t, filepath.Join(c.Dir, "go2"))
	res := <-ran
	if res.ExitCode != 0 {
		t.Fatalf("claude exit %d\n%s", res.ExitCode, res.Stderr)
	}
	eventually(t, "the last turn through spine", func() bool { return spineHas(t, id, "collected-marker-three") })
	col.stop(t)
	caughtUp()

	collectedAllButTheEnd(t, n, caughtUp, 3, res.Transcripts)
}

// collectedAllButTheEnd checks what a collector left in spine against the
// translation of the same files (one session of responses responses):
// every envelope but the end, each once; and a spine import of the files
// then publishes the end alone.
func collectedAllButTheEnd(t *testing.T, n *node.Node, caughtUp func(), responses int, files []string) {
	t.Helper()
	dry := importJSON(t, append([]string{"--dry-run"}, files...)...)
	if dry.Sessions != 1 || dry.Responses != responses {
		t.Fatalf("dry run: %+v", dry)
	}
	if got, want := stored(t, n), uint64(dry.Envelopes-1); got != want {
		t.Fatalf("collected %d envelopes, want every one of the translation's but the end: %d", got, want)
	}
	imp := importJSON(t, files...)
	caughtUp()
	if imp.Envelopes != 1 || stored(t, n) != uint64(dry.Envelopes) {
		t.Fatalf("import after collect published %d envelopes (want the end alone)", imp.Envelopes)
	}
}

// transcriptSession is the spine id of the session the app is writing, ""
// before its transcript exists.
func transcriptSession(c *apprig.Claude) string {
	for _, p := range c.Transcripts() {
		if filepath.Base(filepath.Dir(p)) != "subagents" {
			return apps.SessionID("claude-code", strings.TrimSuffix(filepath.Base(p), ".jsonl"))
		}
	}
	return ""
}

// spineHas reports whether spine's transcript of the session holds text.
func spineHas(t *testing.T, id, text string) bool {
	t.Helper()
	out, err := capture(t, "read", "transcript", id)
	return err == nil && strings.Contains(out, text)
}

func onDisk(c *apprig.Claude, text string) bool {
	for _, p := range c.Transcripts() {
		if data, err := os.ReadFile(p); err == nil && bytes.Contains(data, []byte(text)) {
			return true
		}
	}
	return false
}

func touch(t *testing.T, path string) {
	t.Helper()
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		t.Fatal(err)
	}
}

// A real Codex thread is collected while it runs: its first exec becomes
// readable through spine; the collector is stopped; the thread is resumed
// (Codex appends to the same rollout) with no collector running; a new one
// catches up. The log holds the translation's envelopes but the end, and
// spine import of the rollout publishes only the end.
func TestCollectRealCodexThread(t *testing.T) {
	n, caughtUp := testNode(t)
	srv := fakemodel.Start(t)
	srv.OpenAI(
		fakemodel.Turn{Blocks: []fakemodel.Block{fakemodel.Text("codex-marker-one")},
			Usage: fakemodel.Usage{Input: 900, CacheRead: 3000, Output: 40, Reasoning: 12}},
		fakemodel.Turn{Blocks: []fakemodel.Block{fakemodel.Text("codex-marker-two")},
			Usage: fakemodel.Usage{Input: 100, CacheRead: 3900, Output: 30, Reasoning: 7}},
	)
	c := apprig.NewCodex(t, srv, nil)
	state := filepath.Join(t.TempDir(), "state.json")
	args := []string{"--claude-dir", "", "--codex-dir", c.Home, "--state", state}

	col := startCollectorArgs(t, args...)
	first := c.Exec(t, "say one")
	if first.ExitCode != 0 || first.ThreadID == "" {
		t.Fatalf("codex exit %d thread %q\n%s", first.ExitCode, first.ThreadID, first.Stderr)
	}
	id := apps.SessionID("codex", first.ThreadID)
	eventually(t, "the first exec through spine", func() bool { return spineHas(t, id, "codex-marker-one") })
	col.stop(t)

	second := c.Resume(t, first.ThreadID, "say two")
	if second.ExitCode != 0 || len(second.Rollouts) != 1 {
		t.Fatalf("resume exit %d, rollouts %v\n%s", second.ExitCode, second.Rollouts, second.Stderr)
	}
	col = startCollectorArgs(t, args...)
	eventually(t, "the resumed exec through spine", func() bool { return spineHas(t, id, "codex-marker-two") })
	col.stop(t)
	caughtUp()

	collectedAllButTheEnd(t, n, caughtUp, 2, second.Rollouts)
}

// A real Claude Code session with a subagent, collected live: the
// subagent's transcript (<session>/subagents/agent-*.jsonl) is followed
// too and belongs to the same spine session, so its text is readable on
// that session; the log holds the translation's envelopes but the end, and
// spine import of both transcripts publishes only the end.
func TestCollectRealClaudeSubagent(t *testing.T) {
	n, caughtUp := testNode(t)
	srv := fakemodel.Start(t)
	c := apprig.NewClaude(t, srv, nil)
	u := func(i int64) fakemodel.Usage {
		return fakemodel.Usage{Input: 2 + i, Output: 30 * i, CacheRead: 11000 * i, CacheWrite5m: 700 + i}
	}
	srv.Anthropic(
		fakemodel.Turn{Match: fakemodel.MainThread, Usage: u(1), Blocks: []fakemodel.Block{fakemodel.Text("delegating"),
			fakemodel.Tool("Agent", map[string]any{"description": "count", "prompt": "count the files", "subagent_type": "general-purpose"})}},
		fakemodel.Turn{Match: fakemodel.Subagent, Usage: u(2), Blocks: []fakemodel.Block{fakemodel.Text("subagent-marker"),
			fakemodel.Tool("Bash", map[string]any{"command": "ls | wc -l", "description": "count"})}},
		fakemodel.Turn{Match: fakemodel.Subagent, Usage: u(3), Blocks: []fakemodel.Block{fakemodel.Text("there are none")}},
		fakemodel.Turn{Match: fakemodel.MainThread, Usage: u(4), Blocks: []fakemodel.Block{fakemodel.Text("main-marker-end")}},
	)
	col := startCollector(t, filepath.Join(c.Home, ".claude"), filepath.Join(t.TempDir(), "state.json"))
	res := c.Run("count the files with a subagent", nil)
	if res.ExitCode != 0 || len(res.Transcripts) != 2 {
		t.Fatalf("claude exit %d, transcripts %v\n%s", res.ExitCode, res.Transcripts, res.Stderr)
	}
	id := apps.SessionID("claude-code", res.SessionID)
	eventually(t, "the subagent's and the last text through spine", func() bool {
		return spineHas(t, id, "subagent-marker") && spineHas(t, id, "main-marker-end")
	})
	col.stop(t)
	caughtUp()

	collectedAllButTheEnd(t, n, caughtUp, 4, res.Transcripts)
}
