package importer

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/spinehq/spine/accounting"
	"github.com/spinehq/spine/internal/apprig"
	"github.com/spinehq/spine/internal/fakemodel"
	"github.com/spinehq/spine/streams"
)

// The real Codex against the fake model: each test runs codex 0.171,
// imports what it wrote and compares the import with the model's log,
// the ground truth.

// codexTruth is what the fake model served: the tokens in spine's
// convention (input without the cached part) and the responses.
func codexTruth(log []fakemodel.Served) (Tokens, int) {
	var t Tokens
	for _, r := range log {
		t.add(Tokens{Input: r.Usage.Input, Output: r.Usage.Output, CacheRead: r.Usage.CacheRead,
			Reasoning: r.Usage.Reasoning})
	}
	return t, len(log)
}

// execLog saves a run's exec --json output as a file in dir.
func execLog(t *testing.T, dir, name string, run *apprig.CodexRun) string {
	t.Helper()
	if run.ExitCode != 0 {
		t.Fatalf("codex exited %d\nstdout:\n%s\nstderr:\n%s", run.ExitCode, run.Stdout, run.Stderr)
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, run.Stdout, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// checkCodexSession compares one imported Codex session with the truth:
// its tokens (in the report convention) and responses, its row in the
// summary, the summary's days and the end's usage (in the app's buckets).
func checkCodexSession(t *testing.T, sum *Summary, sink *memSink, id string, want Tokens, responses int) {
	t.Helper()
	got := sessionOf(t, sum, id)
	if got.Tokens != want.report() || got.Responses != responses {
		t.Errorf("session %s: %d responses, tokens %+v; the model served %d, %+v", id, got.Responses,
			got.Tokens, responses, want.report())
	}
	var days accounting.Tokens
	var dayResponses int
	for _, d := range sum.PerDay {
		days.Input, days.Output, days.CacheRead = days.Input+d.Tokens.Input, days.Output+d.Tokens.Output,
			days.CacheRead+d.Tokens.CacheRead
		days.CacheWrite, days.Reasoning, days.Total = days.CacheWrite+d.Tokens.CacheWrite,
			days.Reasoning+d.Tokens.Reasoning, days.Total+d.Tokens.Total
		dayResponses += d.Responses
	}
	if days != sum.Tokens || dayResponses != sum.Responses {
		t.Errorf("perDay %d responses, %+v; the totals %d, %+v", dayResponses, days, sum.Responses, sum.Tokens)
	}
	ends := sink.of(id, streams.TypeSessionEnd)
	if len(ends) != 1 || ends[0].Usage == nil {
		t.Fatalf("session %s: ends %v", id, ends)
	}
	if u := ends[0].Usage; u.InputTokens != want.Input || u.OutputTokens != want.Output ||
		u.CacheReadTokens != want.CacheRead || u.ReasoningTokens != want.Reasoning {
		t.Errorf("session %s: end usage in %d out %d cached %d reasoning %d; the model served %+v", id,
			u.InputTokens, u.OutputTokens, u.CacheReadTokens, u.ReasoningTokens, want)
	}
}

// A thread run with `codex exec` and continued with `codex exec resume`:
// the resumed run's turn.completed carries the thread's running total, so
// the two logs together count what the model served, not 1.5× of it.
func TestCodexExecResumeCountsEachRunOnce(t *testing.T) {
	srv := fakemodel.Start(t)
	srv.OpenAI(
		fakemodel.Turn{Blocks: []fakemodel.Block{fakemodel.Text("one")},
			Usage: fakemodel.Usage{Input: 900, CacheRead: 3000, Output: 40, Reasoning: 12}},
		fakemodel.Turn{Blocks: []fakemodel.Block{fakemodel.Text("two")},
			Usage: fakemodel.Usage{Input: 100, CacheRead: 3900, Output: 30, Reasoning: 7}},
	)
	c := apprig.NewCodex(t, srv, nil)
	dir := t.TempDir()
	first := c.Exec(t, "first")
	execLog(t, dir, "1.jsonl", first)
	execLog(t, dir, "2.jsonl", c.Resume(t, first.ThreadID, "second"))
	want, responses := codexTruth(srv.Log())
	sink := &memSink{}
	sum := run(t, sink, Options{}, dir)
	checkCodexSession(t, sum, sink, SessionID("codex", first.ThreadID), want, responses)
}

var _ = time.Now
