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
