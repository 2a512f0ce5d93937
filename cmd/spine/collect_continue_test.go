package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/spinehq/spine/accounting"
	"github.com/spinehq/spine/apps"
	"github.com/spinehq/spine/internal/apprig"
	"github.com/spinehq/spine/internal/fakemodel"
)

// A real Codex thread ended by the collector as idle, then resumed (codex
// exec resume appends to the same rollout): the resumed run is a
// continuation whose router-call row is the second exec's tokens alone,
// though Codex's token_count is the thread's running total, and whose
// transcript is the second exec's. spine import of the rollout afterwards
// publishes nothing.
func TestCollectCodexContinuation(t *testing.T) {
	n, caughtUp := testNode(t)
	srv := fakemodel.Start(t)
	srv.OpenAI(
		fakemodel.Turn{Blocks: []fakemodel.Block{fakemodel.Text("codex-cont-one")},
			Usage: fakemodel.Usage{Input: 900, CacheRead: 3000, Output: 40, Reasoning: 12}},
		fakemodel.Turn{Blocks: []fakemodel.Block{fakemodel.Text("codex-cont-two")},
			Usage: fakemodel.Usage{Input: 100, CacheRead: 3900, Output: 30, Reasoning: 7}},
	)
	c := apprig.NewCodex(t, srv, nil)
	args := []string{"collect", "--once", "--idle", "1ms", "--claude-dir", "", "--codex-dir", c.Home,
		"--state", filepath.Join(t.TempDir(), "state.json"), "--machine", "m2"}
	collectOnce := func() {
		t.Helper()
		if out, err := capture(t, args...); err != nil {
			t.Fatalf("collect: %v\n%s", err, out)
		}
		caughtUp()
	}
	first := c.Exec(t, "say one")
	if first.ExitCode != 0 || first.ThreadID == "" {
		t.Fatalf("codex exit %d thread %q\n%s", first.ExitCode, first.ThreadID, first.Stderr)
	}
	collectOnce()
	id := apps.SessionID("codex", first.ThreadID)
	base := sessionOf(t, id)
	if base["endedAt"] == nil {
		t.Fatalf("the idle thread's session did not end: %v", base)
	}
	u1 := servedUsage(srv.Log()[:1])
	if row := routerCall(t, n, id); row.tokens != *accounting.Normalise(&u1) {
		t.Fatalf("first router call %+v, the first exec served %+v", row.tokens, *accounting.Normalise(&u1))
	}

	second := c.Resume(t, first.ThreadID, "say two")
	if second.ExitCode != 0 || len(second.Rollouts) != 1 {
		t.Fatalf("resume exit %d, rollouts %v\n%s", second.ExitCode, second.Rollouts, second.Stderr)
	}
	collectOnce()
	cont := apps.ContinuationID("codex", first.ThreadID, int64(base["lastSeq"].(float64)), 0)
	s := sessionOf(t, cont)
	if s["endedAt"] == nil || s["appSessionRef"] != first.ThreadID || s["kind"] != "attach" || s["workerId"] != "m2" {
		t.Fatalf("continuation %s: %v", cont, s)
	}
	out, err := capture(t, "read", "transcript", cont)
	if err != nil || !strings.Contains(out, "codex-cont-two") || strings.Contains(out, "codex-cont-one") {
		t.Fatalf("continuation transcript: %v\n%s", err, out)
	}
	u2 := servedUsage(srv.Log()[1:])
	if row := routerCall(t, n, cont); row.tokens != *accounting.Normalise(&u2) {
		t.Fatalf("continuation's router call %+v, the resumed exec served %+v", row.tokens, *accounting.Normalise(&u2))
	}
	if imp := importJSON(t, second.Rollouts...); imp.Envelopes != 0 {
		t.Fatalf("import after collect published %d envelopes", imp.Envelopes)
	}
}

// A real Claude Code session ended by the collector as idle, then resumed
// by a new process (claude -p --resume ID, which appends to the same
// transcript): the resumed run is a continuation, kind attach with the
// machine, whose transcript and router-call row are the resumed run's
// alone. spine import of the transcript afterwards publishes nothing.
func TestCollectClaudeResumeContinuation(t *testing.T) {
	n, caughtUp := testNode(t)
	srv := fakemodel.Start(t)
	srv.Anthropic(
		fakemodel.Turn{Blocks: []fakemodel.Block{fakemodel.Text("claude-cont-one")}, Match: fakemodel.MainThread,
			Usage: fakemodel.Usage{Input: 7, Output: 21, CacheRead: 6000, CacheWrite5m: 500}},
		fakemodel.Turn{Blocks: []fakemodel.Block{fakemodel.Text("claude-cont-two")}, Match: fakemodel.MainThread,
			Usage: fakemodel.Usage{Input: 4, Output: 13, CacheRead: 6500, CacheWrite5m: 90}},
	)
	c := apprig.NewClaude(t, srv, nil)
	args := []string{"collect", "--once", "--idle", "1ms", "--claude-dir", filepath.Join(c.Home, ".claude"), "--codex-dir", "",
		"--state", filepath.Join(t.TempDir(), "state.json"), "--machine", "m3"}
	collectOnce := func() {
		t.Helper()
		if out, err := capture(t, args...); err != nil {
			t.Fatalf("collect: %v\n%s", err, out)
		}
		caughtUp()
	}
	first := c.Run("say one", nil)
	if first.ExitCode != 0 || first.SessionID == "" {
		t.Fatalf("claude exit %d session %q\n%s", first.ExitCode, first.SessionID, first.Stderr)
	}
	collectOnce()
	id := apps.SessionID("claude-code", first.SessionID)
	base := sessionOf(t, id)
	u1 := servedUsage(srv.Log()[:1])
	if base["endedAt"] == nil || routerCall(t, n, id).tokens != *accounting.Normalise(&u1) {
		t.Fatalf("the idle session: %v, router call %+v, the first run served %+v", base, routerCall(t, n, id).tokens, *accounting.Normalise(&u1))
	}

	second := c.Run("say two", &apprig.RunOptions{Resume: first.SessionID})
	if second.ExitCode != 0 || second.SessionID != first.SessionID {
		t.Fatalf("claude --resume exit %d session %q, want %q\n%s", second.ExitCode, second.SessionID, first.SessionID, second.Stderr)
	}
	if len(second.Transcripts) != 1 || len(first.Transcripts) != 1 || second.Transcripts[0] != first.Transcripts[0] {
		t.Fatalf("claude --resume wrote %v, want the first run's transcript %v grown", second.Transcripts, first.Transcripts)
	}
	collectOnce()
	cont := apps.ContinuationID("claude-code", first.SessionID, int64(base["lastSeq"].(float64)), 0)
	s := sessionOf(t, cont)
	if s["endedAt"] == nil || s["appSessionRef"] != first.SessionID || s["kind"] != "attach" || s["workerId"] != "m3" {
		t.Fatalf("continuation %s: %v (transcripts %v then %v)", cont, s, first.Transcripts, second.Transcripts)
	}
	out, err := capture(t, "read", "transcript", cont)
	if err != nil || !strings.Contains(out, "claude-cont-two") || strings.Contains(out, "claude-cont-one") {
		t.Fatalf("continuation transcript: %v\n%s", err, out)
	}
	u2 := servedUsage(srv.Log()[1:])
	if row := routerCall(t, n, cont); row.tokens != *accounting.Normalise(&u2) {
		t.Fatalf("continuation's router call %+v, the resumed run served %+v", row.tokens, *accounting.Normalise(&u2))
	}
	if imp := importJSON(t, second.Transcripts...); imp.Envelopes != 0 {
		t.Fatalf("import after collect published %d envelopes", imp.Envelopes)
	}
}
