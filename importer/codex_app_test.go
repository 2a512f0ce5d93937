package importer

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spinehq/spine/accounting"
	"github.com/spinehq/spine/apps"
	"github.com/spinehq/spine/internal/apprig"
	"github.com/spinehq/spine/internal/fakemodel"
	"github.com/spinehq/spine/streams"
)

// The real Codex against the fake model: each test runs codex 0.171,
// imports what it wrote and compares the import with the model's log,
// the ground truth.

// codexTruth is what the fake model served: the tokens in spine's
// convention (input without the cached part) and the responses.
func codexTruth(log []fakemodel.Served) (streams.Usage, int) {
	var t streams.Usage
	for _, r := range log {
		t.Add(streams.Usage{InputTokens: r.Usage.Input, OutputTokens: r.Usage.Output, CacheReadTokens: r.Usage.CacheRead,
			ReasoningTokens: r.Usage.Reasoning})
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
func checkCodexSession(t *testing.T, sum *Summary, sink *memSink, id string, want streams.Usage, responses int) {
	t.Helper()
	got := sessionOf(t, sum, id)
	if got.Tokens != report(want) || got.Responses != responses {
		t.Errorf("session %s: %d responses, tokens %+v; the model served %d, %+v", id, got.Responses,
			got.Tokens, responses, report(want))
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
	if len(sum.PerSession) == 1 && (sum.Tokens != got.Tokens || sum.Responses != got.Responses) {
		t.Errorf("the totals %d, %+v; perSession %d, %+v", sum.Responses, sum.Tokens, got.Responses, got.Tokens)
	}
	ends := sink.of(id, streams.TypeSessionEnd)
	if len(ends) != 1 || ends[0].Usage == nil {
		t.Fatalf("session %s: ends %v", id, ends)
	}
	if u := ends[0].Usage; u.InputTokens != want.InputTokens || u.OutputTokens != want.OutputTokens ||
		u.CacheReadTokens != want.CacheReadTokens || u.ReasoningTokens != want.ReasoningTokens {
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
	checkCodexSession(t, sum, sink, apps.SessionID("codex", first.ThreadID), want, responses)
}

// events are a session's published actions, in order.
func events(sink *memSink, id string) []*streams.Event {
	var out []*streams.Event
	for _, e := range sink.of(id, streams.TypeSessionChunk) {
		if e.Event != nil {
			out = append(out, e.Event)
		}
	}
	return out
}

// prose is a session's published stdout and stderr, in order.
func prose(sink *memSink, id string) string {
	var b strings.Builder
	for _, e := range sink.of(id, streams.TypeSessionChunk) {
		b.WriteString(e.Text)
	}
	return b.String()
}

func mcpTool(tool string, args map[string]any) fakemodel.Block {
	return fakemodel.Block{Kind: "tool", Tool: tool, Namespace: "mcp__spine", Input: args}
}

// A 0.171 rollout of a thread run and resumed: the prompts come only as
// user messages (no event_msg user_message), MCP calls as function calls
// in namespace mcp__spine, and a tool_search_call has object arguments.
// The first prompt is the start's, the resumed one is in the transcript,
// each MCP call is an mcp_call with its arguments and outcome, and no
// line is skipped for its arguments.
func TestCodexRolloutPromptsAndMCPCalls(t *testing.T) {
	srv := fakemodel.Start(t)
	srv.OpenAI(
		fakemodel.Turn{Blocks: []fakemodel.Block{fakemodel.Thinking("find the tools"),
			fakemodel.Tool("tool_search", map[string]any{"query": "spine echo", "limit": 8})},
			Usage: fakemodel.Usage{Input: 800, CacheRead: 3000, Output: 20, Reasoning: 9}},
		fakemodel.Turn{Blocks: []fakemodel.Block{mcpTool("echo", map[string]any{"text": "ping"})},
			Usage: fakemodel.Usage{Input: 300, CacheRead: 3800, Output: 15}},
		fakemodel.Turn{Blocks: []fakemodel.Block{mcpTool("fail", map[string]any{"reason": "on purpose"})},
			Usage: fakemodel.Usage{Input: 120, CacheRead: 4100, Output: 15}},
		fakemodel.Turn{Blocks: []fakemodel.Block{fakemodel.Text("first done")},
			Usage: fakemodel.Usage{Input: 90, CacheRead: 4200, Output: 6}},
		fakemodel.Turn{Blocks: []fakemodel.Block{fakemodel.Tool("exec_command", map[string]any{"cmd": "echo resumed"})},
			Usage: fakemodel.Usage{Input: 400, CacheRead: 4300, Output: 25, Reasoning: 4}},
		fakemodel.Turn{Blocks: []fakemodel.Block{fakemodel.Text("second done")},
			Usage: fakemodel.Usage{Input: 60, CacheRead: 4700, Output: 5}},
	)
	c := apprig.NewCodex(t, srv, &apprig.CodexOptions{MCP: true})
	first := c.Exec(t, "use the spine tools")
	second := c.Resume(t, first.ThreadID, "now run a command")
	if first.ExitCode != 0 || second.ExitCode != 0 || len(second.Rollouts) != 1 {
		t.Fatalf("exit %d, %d; rollouts %v\nstderr:\n%s", first.ExitCode, second.ExitCode, second.Rollouts, second.Stderr)
	}
	want, responses := codexTruth(srv.Log())
	sink := &memSink{}
	sum := run(t, sink, Options{}, second.Rollouts...)
	id := apps.SessionID("codex", first.ThreadID)
	checkCodexSession(t, sum, sink, id, want, responses)
	for _, sk := range sum.Skipped {
		t.Errorf("skipped line %d: %s", sk.Line, sk.Reason)
	}
	starts := sink.of(id, streams.TypeSessionStart)
	if len(starts) != 1 || starts[0].Prompt != "use the spine tools" {
		t.Fatalf("start prompt %q: want the first prompt", starts[0].Prompt)
	}
	if p := prose(sink, id); !strings.Contains(p, "\n> now run a command\n") || !strings.Contains(p, "second done") {
		t.Errorf("the transcript lacks the resumed prompt or the answer:\n%s", p)
	}
	evs := events(sink, id)
	if len(evs) != 3 {
		t.Fatalf("%d actions, want 2 MCP calls and a command: %+v", len(evs), evs)
	}
	echo, fail, cmd := evs[0], evs[1], evs[2]
	if echo.Action != "mcp_call" || echo.Server != "spine" || echo.Tool != "echo" || echo.IsError ||
		string(echo.Arguments) != `{"text":"ping"}` || !strings.Contains(echo.Output, "ping") {
		t.Errorf("echo call %+v (arguments %s)", echo, echo.Arguments)
	}
	if fail.Action != "mcp_call" || fail.Tool != "fail" || !fail.IsError || string(fail.Arguments) != `{"reason":"on purpose"}` {
		t.Errorf("fail call %+v (arguments %s)", fail, fail.Arguments)
	}
	if cmd.Action != "command" || cmd.Command != "echo resumed" || !strings.Contains(cmd.Output, "resumed") {
		t.Errorf("command %+v", cmd)
	}
}

// codexThread runs a thread through every kind of step Codex 0.171 takes
// here: reasoning, text, a command, a patch, MCP calls found through
// tool_search (one failing), then a resumed run with another command.
// It returns the fake model, the home and the two runs.
func codexThread(t *testing.T) (*fakemodel.Server, *apprig.Codex, *apprig.CodexRun, *apprig.CodexRun) {
	t.Helper()
	srv, c, first, second, _, _ := codexThreadTimed(t)
	return srv, c, first, second
}

// codexThreadTimed is codexThread with the wall-clock span the two runs
// took: every time Codex wrote lies within it.
func codexThreadTimed(t *testing.T) (srv *fakemodel.Server, c *apprig.Codex, first, second *apprig.CodexRun,
	began, ended time.Time) {
	t.Helper()
	srv = fakemodel.Start(t)
	srv.OpenAI(
		fakemodel.Turn{Blocks: []fakemodel.Block{fakemodel.Thinking("look first"), fakemodel.Text("listing"),
			fakemodel.Tool("exec_command", map[string]any{"cmd": "echo hi"})},
			Usage: fakemodel.Usage{Input: 900, CacheRead: 3000, Output: 40, Reasoning: 12}},
		fakemodel.Turn{Blocks: []fakemodel.Block{fakemodel.Tool("apply_patch",
			"*** Begin Patch\n*** Add File: hello.txt\n+hello\n*** End Patch\n")},
			Usage: fakemodel.Usage{Input: 100, CacheRead: 3900, Output: 30}},
		fakemodel.Turn{Blocks: []fakemodel.Block{fakemodel.Tool("tool_search", map[string]any{"query": "spine echo"})},
			Usage: fakemodel.Usage{Input: 70, CacheRead: 4000, Output: 12}},
		fakemodel.Turn{Blocks: []fakemodel.Block{mcpTool("echo", map[string]any{"text": "ping"})},
			Usage: fakemodel.Usage{Input: 300, CacheRead: 4050, Output: 15}},
		fakemodel.Turn{Blocks: []fakemodel.Block{mcpTool("fail", map[string]any{"reason": "on purpose"})},
			Usage: fakemodel.Usage{Input: 120, CacheRead: 4300, Output: 15}},
		fakemodel.Turn{Blocks: []fakemodel.Block{fakemodel.Text("first done")},
			Usage: fakemodel.Usage{Input: 50, CacheRead: 4400, Output: 5}},
		fakemodel.Turn{Blocks: []fakemodel.Block{fakemodel.Tool("exec_command", map[string]any{"cmd": "cat hello.txt"})},
			Usage: fakemodel.Usage{Input: 400, CacheRead: 4500, Output: 25, Reasoning: 4}},
		fakemodel.Turn{Blocks: []fakemodel.Block{fakemodel.Text("second done")},
			Usage: fakemodel.Usage{Input: 60, CacheRead: 4900, Output: 5}},
	)
	c = apprig.NewCodex(t, srv, &apprig.CodexOptions{MCP: true})
	began = time.Now().UTC().Truncate(time.Millisecond)
	first = c.Exec(t, "list, write and look up")
	second = c.Resume(t, first.ThreadID, "read it back")
	ended = time.Now().UTC()
	if first.ExitCode != 0 || second.ExitCode != 0 || len(second.Rollouts) != 1 || len(srv.Scripted()) != 8 {
		t.Fatalf("exit %d, %d; rollouts %v; %d scripted responses served\nstderr:\n%s", first.ExitCode,
			second.ExitCode, second.Rollouts, len(srv.Scripted()), second.Stderr)
	}
	return srv, c, first, second, began, ended
}

// Every line type a 0.171 rollout writes is known: world_state and
// token_usage_record included, nothing is reported unknown.
func TestCodexRolloutLineTypesAreKnown(t *testing.T) {
	_, _, _, second := codexThread(t)
	sum := run(t, &memSink{}, Options{}, second.Rollouts...)
	if sum.SkippedTotal != 0 {
		t.Fatalf("skipped %d lines: %+v", sum.SkippedTotal, sum.Skipped)
	}
}

// One thread imported from its rollout and its two exec --json logs
// together, in either order, as `spine import ~/.codex logs/` would: one
// session, its responses and tokens counted once (the summary's days
// agree with its sessions), every action and line of prose stored once.
func TestCodexRolloutAndExecLogTogether(t *testing.T) {
	srv, c, first, second := codexThread(t)
	logs := t.TempDir()
	execLog(t, logs, "1.jsonl", first)
	execLog(t, logs, "2.jsonl", second)
	want, responses := codexTruth(srv.Log())
	id := apps.SessionID("codex", first.ThreadID)
	for name, paths := range map[string][]string{
		"rollouts first": {filepath.Join(c.Home, "sessions"), logs},
		"logs first":     {logs, filepath.Join(c.Home, "sessions")},
	} {
		t.Run(name, func(t *testing.T) {
			sink := &memSink{}
			sum := run(t, sink, Options{}, paths...)
			if sum.Sessions != 1 || len(sum.PerSession) != 1 {
				t.Fatalf("%d sessions: %+v", sum.Sessions, sum.PerSession)
			}
			checkCodexSession(t, sum, sink, id, want, responses)
			var actions []string
			for _, ev := range events(sink, id) {
				actions = append(actions, ev.Action+" "+ev.Command+ev.Path+ev.Tool)
			}
			if len(actions) != 5 {
				t.Errorf("actions %q: want the 2 commands, the write and the 2 MCP calls once each", actions)
			}
			p := prose(sink, id)
			for _, line := range []string{"listing\n", "first done\n", "second done\n"} {
				if n := strings.Count(p, line); n != 1 {
					t.Errorf("%q is in the transcript %d times:\n%s", line, n, p)
				}
			}
		})
	}
}

// codex exec --json alone: each MCP call is an mcp_call with its
// arguments, its result's text and whether it failed.
func TestCodexExecMCPCalls(t *testing.T) {
	_, _, first, second := codexThread(t)
	logs := t.TempDir()
	sink := &memSink{}
	run(t, sink, Options{}, execLog(t, logs, "1.jsonl", first), execLog(t, logs, "2.jsonl", second))
	var calls []*streams.Event
	for _, ev := range events(sink, apps.SessionID("codex", first.ThreadID)) {
		if ev.Action == "mcp_call" {
			calls = append(calls, ev)
		}
	}
	if len(calls) != 2 {
		t.Fatalf("%d MCP calls, want 2", len(calls))
	}
	echo, fail := calls[0], calls[1]
	if echo.Server != "spine" || echo.Tool != "echo" || echo.IsError || string(echo.Arguments) != `{"text":"ping"}` ||
		!strings.Contains(echo.Output, "ping") || strings.Contains(echo.Output, "structured_content") {
		t.Errorf("echo call %+v (arguments %s)", echo, echo.Arguments)
	}
	if fail.Tool != "fail" || !fail.IsError || string(fail.Arguments) != `{"reason":"on purpose"}` ||
		!strings.Contains(fail.Output, "on purpose") {
		t.Errorf("fail call %+v (arguments %s)", fail, fail.Arguments)
	}
}

// Billing is what the output says: a rollout of a home signed in with
// ChatGPT names the account (subscription); one run with an API key, and
// exec --json logs, say nothing (unknown). Options.Billing overrides.
func TestCodexBilling(t *testing.T) {
	srv := fakemodel.Start(t)
	srv.OpenAI(fakemodel.Turn{Blocks: []fakemodel.Block{fakemodel.Text("on a plan")},
		Usage: fakemodel.Usage{Input: 100, CacheRead: 2000, Output: 5}},
		fakemodel.Turn{Blocks: []fakemodel.Block{fakemodel.Text("on a key")},
			Usage: fakemodel.Usage{Input: 100, CacheRead: 2000, Output: 5}})
	plan := apprig.NewCodex(t, srv, &apprig.CodexOptions{ChatGPT: true}).Exec(t, "hello")
	key := apprig.NewCodex(t, srv, nil).Exec(t, "hello")
	logs := t.TempDir()
	planLog, keyLog := execLog(t, logs, "plan.jsonl", plan), execLog(t, logs, "key.jsonl", key)
	billing := func(opts Options, paths ...string) string {
		t.Helper()
		sink := &memSink{}
		sum := run(t, sink, opts, paths...)
		if len(sum.PerSession) != 1 {
			t.Fatalf("%d sessions", len(sum.PerSession))
		}
		ends := sink.of(sum.PerSession[0].SessionID, streams.TypeSessionEnd)
		if len(ends) != 1 {
			t.Fatalf("%d ends", len(ends))
		}
		return ends[0].Billing
	}
	for _, c := range []struct {
		name  string
		opts  Options
		paths []string
		want  string
	}{
		{"ChatGPT rollout", Options{}, plan.Rollouts, "subscription"},
		{"ChatGPT rollout and exec log", Options{}, append([]string{planLog}, plan.Rollouts...), "subscription"},
		{"ChatGPT exec log", Options{}, []string{planLog}, ""},
		{"API key rollout", Options{}, key.Rollouts, ""},
		{"API key exec log", Options{}, []string{keyLog}, ""},
		{"ChatGPT rollout, --billing metered", Options{Billing: "metered"}, plan.Rollouts, "metered"},
		{"API key rollout, --billing metered", Options{Billing: "metered"}, key.Rollouts, "metered"},
	} {
		if got := billing(c.opts, c.paths...); got != c.want {
			t.Errorf("%s: billing %q, want %q", c.name, got, c.want)
		}
	}
	// apps.CodexRolloutBilling (spine run's read of an exec run's rollout)
	// says what the rollout's translation says.
	for _, c := range []struct {
		rollouts []string
		want     string
	}{{plan.Rollouts, "subscription"}, {key.Rollouts, ""}} {
		f, err := os.Open(c.rollouts[0])
		if err != nil {
			t.Fatal(err)
		}
		got, err := apps.CodexRolloutBilling(f)
		f.Close()
		if err != nil || got != c.want {
			t.Errorf("CodexRolloutBilling of %s: %q (%v), want %q", c.rollouts[0], got, err, c.want)
		}
	}
}

// A session's start and end are the times the output carries: a rollout's
// (alone or with the thread's exec logs, whatever the files' modification
// times) lie within the runs and its days are theirs. exec --json carries
// none: alone, start and end are the first log's modification time, never
// one before the other, and the summary says the session is untimed.
func TestCodexTimes(t *testing.T) {
	_, c, first, second, began, ended := codexThreadTimed(t)
	logs := t.TempDir()
	copied := ended.AddDate(1, 0, 0).Truncate(time.Millisecond) // the day the files were copied
	paths := []string{execLog(t, logs, "1.jsonl", first), execLog(t, logs, "2.jsonl", second)}
	for _, p := range append(paths, second.Rollouts...) {
		if err := os.Chtimes(p, copied, copied); err != nil {
			t.Fatal(err)
		}
	}
	id := apps.SessionID("codex", first.ThreadID)
	span := func(paths ...string) (start, end time.Time, sum *Summary) {
		t.Helper()
		sink := &memSink{}
		sum = run(t, sink, Options{}, paths...)
		starts, ends := sink.of(id, streams.TypeSessionStart), sink.of(id, streams.TypeSessionEnd)
		if len(starts) != 1 || len(ends) != 1 {
			t.Fatalf("%d starts, %d ends", len(starts), len(ends))
		}
		return starts[0].At, ends[0].At, sum
	}
	for name, ps := range map[string][]string{
		"rollout":               second.Rollouts,
		"rollout and exec logs": {filepath.Join(c.Home, "sessions"), logs},
		"exec logs and rollout": {logs, filepath.Join(c.Home, "sessions")},
	} {
		start, end, sum := span(ps...)
		if start.Before(began) || end.After(ended) || end.Before(start) || sessionOf(t, sum, id).Untimed {
			t.Errorf("%s: start %v, end %v (untimed %v); the runs went from %v to %v", name, start, end,
				sessionOf(t, sum, id).Untimed, began, ended)
		}
		for _, d := range sum.PerDay {
			if d.Date != began.Format(time.DateOnly) && d.Date != ended.Format(time.DateOnly) {
				t.Errorf("%s: responses on %s, not a day the runs took", name, d.Date)
			}
		}
	}
	start, end, sum := span(paths...)
	if !start.Equal(copied) || !end.Equal(copied) || !sessionOf(t, sum, id).Untimed {
		t.Errorf("exec logs alone: start %v, end %v (untimed %v); they carry no time, so both are the first "+
			"log's %v and the session is untimed", start, end, sessionOf(t, sum, id).Untimed, copied)
	}
}

// A real rollout of a thread run and resumed, imported alone, is what the
// model served and the tools did: tokens and responses, no cost (Codex
// reports none), the model, the prompts, and each step as it happened —
// the commands with their own output and exit code, the patch's file at
// its path in the workspace with its content, the MCP calls.
func TestCodexRolloutMatchesTheModel(t *testing.T) {
	srv, c, first, second := codexThread(t)
	want, responses := codexTruth(srv.Log())
	sink := &memSink{}
	sum := run(t, sink, Options{}, second.Rollouts...)
	id := apps.SessionID("codex", first.ThreadID)
	checkCodexSession(t, sum, sink, id, want, responses)
	end := sink.of(id, streams.TypeSessionEnd)[0]
	if end.TotalCost != nil || end.Model != apprig.CodexModel || end.Status != "done" {
		t.Errorf("end: cost %v, model %q, status %q", end.TotalCost, end.Model, end.Status)
	}
	if p := sink.of(id, streams.TypeSessionStart)[0].Prompt; p != "list, write and look up" {
		t.Errorf("prompt %q", p)
	}
	if p := prose(sink, id); !strings.Contains(p, "\n> read it back\n") {
		t.Errorf("the resumed prompt is not in the transcript:\n%s", p)
	}
	evs := events(sink, id)
	if len(evs) != 5 {
		t.Fatalf("%d steps, want 5: %+v", len(evs), evs)
	}
	zero := 0
	for i, w := range []streams.Event{
		{Action: "command", Command: "echo hi", Output: "hi\n", ExitCode: &zero},
		{Action: "file_write", Path: filepath.Join(c.Dir, "hello.txt"), Content: "hello\n"},
		{Action: "mcp_call", Server: "spine", Tool: "echo"},
		{Action: "mcp_call", Server: "spine", Tool: "fail", IsError: true},
		{Action: "command", Command: "cat hello.txt", Output: "hello\n", ExitCode: &zero},
	} {
		g := evs[i]
		if g.Action != w.Action || g.Command != w.Command || g.Path != w.Path || g.Content != w.Content ||
			g.Tool != w.Tool || g.IsError != w.IsError || w.Action == "command" && (g.Output != w.Output ||
			g.ExitCode == nil || *g.ExitCode != 0) {
			t.Errorf("step %d: %s %q %q %q exit %v output %q; want %s %q %q %q output %q", i, g.Action, g.Command,
				g.Path, g.Content, g.ExitCode, g.Output, w.Action, w.Command, w.Path, w.Content, w.Output)
		}
	}
}

// A codex exec run that dies inside a command (killed once the command's
// item.started is out, as a crash or a closed terminal would) leaves an
// item.started with no item.completed: the command is recorded as having
// no result, not left out and not invented as a finished one.
func TestCodexExecCallWithoutResult(t *testing.T) {
	srv := fakemodel.Start(t)
	kill := "sleep 5 # spine-stop-marker"
	srv.OpenAI(fakemodel.Turn{Blocks: []fakemodel.Block{fakemodel.Tool("exec_command", map[string]any{"cmd": "echo before"})},
		Usage: fakemodel.Usage{Input: 300, CacheRead: 1000, Output: 20}},
		fakemodel.Turn{Blocks: []fakemodel.Block{fakemodel.Tool("exec_command", map[string]any{"cmd": kill})},
			Usage: fakemodel.Usage{Input: 300, CacheRead: 1300, Output: 20}})
	c := apprig.NewCodex(t, srv, nil)
	c.KillWhen = "spine-stop-marker"
	res := c.Exec(t, "run, then stop")
	if res.ExitCode == 0 {
		t.Fatalf("codex was not stopped:\n%s", res.Stdout)
	}
	log := filepath.Join(t.TempDir(), "exec.jsonl")
	if err := os.WriteFile(log, res.Stdout, 0o600); err != nil {
		t.Fatal(err)
	}
	sink := &memSink{}
	run(t, sink, Options{}, log)
	var got []*streams.Event
	for _, ev := range events(sink, apps.SessionID("codex", res.ThreadID)) {
		if ev.Action == "command" {
			got = append(got, ev)
		}
	}
	if len(got) != 2 {
		t.Fatalf("%d commands, want 2 (the answered one and the one codex died in):\n%s", len(got), res.Stdout)
	}
	if c := got[0]; c.NoResult || !strings.Contains(c.Output, "before") || c.ExitCode == nil {
		t.Errorf("the answered command %+v", c)
	}
	if c := got[1]; !c.NoResult || c.Command == "" || c.Output != "" || c.ExitCode != nil {
		t.Errorf("the unanswered command %+v", c)
	}
}
