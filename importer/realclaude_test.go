package importer

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spinehq/spine/accounting"
	"github.com/spinehq/spine/internal/apprig"
	"github.com/spinehq/spine/internal/fakemodel"
	"github.com/spinehq/spine/streams"
)

// The real Claude Code against the fake model: the served log is the
// truth every import of what the app wrote is compared with.

// claudeTurnUsage is a realistic usage for turn n: a big cache read, a cache
// write split between the two lifetimes, a little fresh input.
func claudeTurnUsage(n int64) fakemodel.Usage {
	return fakemodel.Usage{Input: 2 + n, Output: 30*n + 7, CacheRead: 11000*n + 13, CacheWrite5m: 700 + n, CacheWrite1h: 40 * n}
}

// onMain is a turn for the main thread's request, onSub one for a
// subagent's.
func onMain(u fakemodel.Usage, blocks ...fakemodel.Block) fakemodel.Turn {
	return fakemodel.Turn{Blocks: blocks, Usage: u, Match: fakemodel.MainThread}
}

func onSub(u fakemodel.Usage, blocks ...fakemodel.Block) fakemodel.Turn {
	return fakemodel.Turn{Blocks: blocks, Usage: u, Match: fakemodel.Subagent}
}

// servedTokens are the tokens of every response served, as the summary
// counts them (docs/counting.md#1-the-token-convention: input with cache
// reads and writes of both lifetimes).
func servedTokens(log []fakemodel.Served) accounting.Tokens {
	var t streams.Usage
	for _, r := range log {
		t.Add(streams.Usage{InputTokens: r.Usage.Input, OutputTokens: r.Usage.Output, CacheReadTokens: r.Usage.CacheRead,
			CacheWriteTokens: r.Usage.CacheWrite5m + r.Usage.CacheWrite1h})
	}
	return report(t)
}

// runClaude runs one prompt and fails the test unless the app ended well
// and was served every scripted turn.
func runClaude(t *testing.T, srv *fakemodel.Server, c *apprig.Claude, prompt string, opts *apprig.RunOptions) *apprig.ClaudeRun {
	t.Helper()
	run := c.Run(prompt, opts)
	if run.ExitCode != 0 || run.SessionID == "" {
		t.Fatalf("claude exit %d, session %q\nstdout: %s\nstderr: %s", run.ExitCode, run.SessionID, run.Stdout, run.Stderr)
	}
	return run
}

// importOnly imports files with a fresh memory sink and returns the one
// session it found with its envelopes.
func importOnly(t *testing.T, opts Options, paths ...string) (Imported, *memSink) {
	t.Helper()
	sink := &memSink{}
	sum := run(t, sink, opts, paths...)
	if len(sum.PerSession) != 1 {
		t.Fatalf("import %v: %d sessions, want 1: %+v", paths, len(sum.PerSession), sum.PerSession)
	}
	return sum.PerSession[0], sink
}

// subagentFiles are the transcripts of subagents among paths.
func subagentFiles(paths []string) (main, sub []string) {
	for _, p := range paths {
		if strings.Contains(p, "/subagents/") {
			sub = append(sub, p)
		} else {
			main = append(main, p)
		}
	}
	return main, sub
}

// A session with a Task subagent: stream-json's result.usage is the main
// thread's alone, result.modelUsage every thread's. Imported from its log
// alone, with its transcripts, or from the transcripts alone, the session
// counts every response the model served.
func TestRealClaudeSubagentTokens(t *testing.T) {
	srv := fakemodel.Start(t)
	c := apprig.NewClaude(t, srv, nil)
	srv.Anthropic(
		onMain(claudeTurnUsage(1), fakemodel.Text("delegating"),
			fakemodel.Tool("Agent", map[string]any{"description": "count", "prompt": "count the files", "subagent_type": "general-purpose"})),
		onSub(claudeTurnUsage(2), fakemodel.Text("listing"), fakemodel.Tool("Bash", map[string]any{"command": "ls | wc -l", "description": "count"})),
		onSub(claudeTurnUsage(3), fakemodel.Text("there are none")),
		onMain(claudeTurnUsage(4), fakemodel.Text("the subagent found none")),
	)
	run := runClaude(t, srv, c, "count the files with a subagent", nil)
	log := srv.Log()
	if len(log) != 4 || log[1].Thread != fakemodel.ThreadSubagent {
		t.Fatalf("served %+v, want 4 responses, the second a subagent's", log)
	}
	truth := servedTokens(log)
	mainFile, subFiles := subagentFiles(run.Transcripts)
	if len(subFiles) != 1 {
		t.Fatalf("transcripts %v, want one subagent's", run.Transcripts)
	}
	// The log shows the main thread's responses and a subagent's that
	// called a tool; the subagent's others are only in its transcript.
	shown := 0
	for _, r := range log {
		if r.Thread == fakemodel.ThreadMain || len(r.Tools) > 0 {
			shown++
		}
	}
	cases := []struct {
		name      string
		paths     []string
		responses int
	}{
		{"stream-json", []string{run.Log}, shown},
		{"stream-json+transcripts", append([]string{run.Log}, run.Transcripts...), len(log)},
		{"transcripts+stream-json", append(append([]string{}, run.Transcripts...), run.Log), len(log)},
		{"stream-json+main transcript", append([]string{run.Log}, mainFile...), shown},
		{"transcripts", run.Transcripts, len(log)},
	}
	for _, tc := range cases {
		got, _ := importOnly(t, Options{}, tc.paths...)
		if got.Tokens != truth || got.Responses != tc.responses {
			t.Errorf("%s: tokens %+v, %d responses; the model served %+v in %d (the import should count %d)",
				tc.name, got.Tokens, got.Responses, truth, len(log), tc.responses)
		}
	}
}

// ends are a sink's session.end envelopes.
func ends(sink *memSink) []*streams.Envelope {
	var out []*streams.Envelope
	for _, e := range sink.envs {
		if e.Type == streams.TypeSessionEnd {
			out = append(out, e)
		}
	}
	return out
}

// resultCost is the total_cost_usd of a run's result line.
func resultCost(t *testing.T, out []byte) float64 {
	t.Helper()
	var cost *float64
	for _, line := range bytes.Split(out, []byte("\n")) {
		var r struct {
			Type string   `json:"type"`
			Cost *float64 `json:"total_cost_usd"`
		}
		if json.Unmarshal(line, &r) == nil && r.Type == "result" && r.Cost != nil {
			cost = r.Cost
		}
	}
	if cost == nil {
		t.Fatalf("no total_cost_usd in %s", out)
	}
	return *cost
}

// A resumed session (`claude -p --resume ID`): each process reports its
// own total_cost_usd and modelUsage. The session's cost is their sum and
// its tokens every response the model served, whatever the order of the
// logs, and also when both runs' output went into one file.
func TestRealClaudeResumedCost(t *testing.T) {
	srv := fakemodel.Start(t)
	c := apprig.NewClaude(t, srv, nil)
	srv.Anthropic(
		onMain(claudeTurnUsage(1), fakemodel.Tool("Bash", map[string]any{"command": "echo one", "description": "one"})),
		onMain(claudeTurnUsage(2), fakemodel.Text("one")),
		onMain(claudeTurnUsage(3), fakemodel.Text("two")),
	)
	first := runClaude(t, srv, c, "first", nil)
	second := runClaude(t, srv, c, "second", &apprig.RunOptions{Resume: first.SessionID})
	if second.SessionID != first.SessionID {
		t.Fatalf("resumed as %s, not %s", second.SessionID, first.SessionID)
	}
	c1, c2 := resultCost(t, first.Stdout), resultCost(t, second.Stdout)
	truth := servedTokens(srv.Log())
	both := filepath.Join(t.TempDir(), "both.jsonl")
	if err := os.WriteFile(both, append(append([]byte{}, first.Stdout...), second.Stdout...), 0o644); err != nil {
		t.Fatal(err)
	}
	for name, paths := range map[string][]string{
		"first, second":       {first.Log, second.Log},
		"second, first":       {second.Log, first.Log},
		"one file":            {both},
		"with the transcript": append([]string{second.Log, first.Log}, first.Transcripts...),
	} {
		got, _ := importOnly(t, Options{}, paths...)
		if got.TotalCost == nil || math.Abs(*got.TotalCost-(c1+c2)) > 1e-12 || got.Tokens != truth {
			t.Errorf("%s: cost %v, tokens %+v; the runs reported %v + %v, the model served %+v",
				name, costOf(got.TotalCost), got.Tokens, c1, c2, truth)
		}
	}
}

// One process answering two queries (--input-format stream-json) writes
// a system/init and a result per query, each result with the process's
// running modelUsage and total_cost_usd: the session's cost is the last
// one, not the sum, and its tokens every response served.
func TestRealClaudeOneProcessTwoQueries(t *testing.T) {
	srv := fakemodel.Start(t)
	c := apprig.NewClaude(t, srv, nil)
	srv.Anthropic(onMain(claudeTurnUsage(1), fakemodel.Text("one")), onMain(claudeTurnUsage(2), fakemodel.Text("two")))
	run := runClaude(t, srv, c, "first", &apprig.RunOptions{More: []string{"second"}})
	if n := bytes.Count(run.Stdout, []byte(`"subtype":"init"`)); n != 2 {
		t.Fatalf("%d system/init lines, want one per query: %s", n, run.Stdout)
	}
	got, _ := importOnly(t, Options{}, run.Log)
	cost, truth := resultCost(t, run.Stdout), servedTokens(srv.Log())
	if got.TotalCost == nil || *got.TotalCost != cost || got.Tokens != truth {
		t.Errorf("cost %v, tokens %+v; the process's last result reported %v, the model served %+v",
			costOf(got.TotalCost), got.Tokens, cost, truth)
	}
}

// costOf prints a cost that may be absent.
func costOf(c *float64) any {
	if c == nil {
		return "absent"
	}
	return *c
}

// chunkView is what a chunk recorded, without its ids and times.
type chunkView struct {
	Stream, Text, Action, Path, Command, Output, Tool string
}

// chunksOf are a sink's chunks as views, in order.
func chunksOf(sink *memSink) []chunkView {
	var out []chunkView
	for _, e := range sink.envs {
		if e.Type != streams.TypeSessionChunk {
			continue
		}
		v := chunkView{Stream: e.Stream, Text: e.Text}
		if ev := e.Event; ev != nil {
			v.Action, v.Path, v.Command, v.Output, v.Tool = ev.Action, ev.Path, ev.Command, ev.Output, ev.Tool
		}
		out = append(out, v)
	}
	return out
}

// One session imported from its stream-json log and its transcripts
// together, in either order, and from the log twice (a copy under another
// name): nothing is counted or stored twice. The transcripts hold every
// line the log has (same uuids), so the chunks are the transcripts'
// alone; the tokens, responses and cost are those of the log with the
// transcripts' responses.
func TestRealClaudeTwoFormats(t *testing.T) {
	srv := fakemodel.Start(t)
	c := apprig.NewClaude(t, srv, nil)
	note := filepath.Join(c.Dir, "note.txt")
	srv.Anthropic(
		onMain(claudeTurnUsage(1), fakemodel.Thinking("a note first"), fakemodel.Text("writing the note"),
			fakemodel.Tool("Write", map[string]any{"file_path": note, "content": "two formats\n"})),
		onMain(claudeTurnUsage(2), fakemodel.Text("now a subagent"),
			fakemodel.Tool("Agent", map[string]any{"description": "read", "prompt": "read note.txt", "subagent_type": "general-purpose"})),
		onSub(claudeTurnUsage(3), fakemodel.Text("reading"), fakemodel.Tool("Read", map[string]any{"file_path": note})),
		onSub(claudeTurnUsage(4), fakemodel.Text("it says two formats")),
		onMain(claudeTurnUsage(5), fakemodel.Tool("Bash", map[string]any{"command": "wc -c note.txt", "description": "size"})),
		onMain(claudeTurnUsage(6), fakemodel.Text("done: 12 bytes")),
	)
	run := runClaude(t, srv, c, "write a note, have it read, size it", nil)
	log := srv.Log()
	truth, cost := servedTokens(log), resultCost(t, run.Stdout)

	transcriptsOnly, ref := importOnly(t, Options{}, run.Transcripts...)
	want := chunksOf(ref)
	if transcriptsOnly.Responses != len(log) || len(want) == 0 {
		t.Fatalf("transcripts alone: %d responses of %d, %d chunks", transcriptsOnly.Responses, len(log), len(want))
	}
	copyOfLog := filepath.Join(t.TempDir(), "copy.jsonl")
	if err := os.WriteFile(copyOfLog, run.Stdout, 0o644); err != nil {
		t.Fatal(err)
	}
	streamOnly, streamRef := importOnly(t, Options{}, run.Log)
	for name, paths := range map[string][]string{
		"log, transcripts": append([]string{run.Log}, run.Transcripts...),
		"transcripts, log": append(append([]string{}, run.Transcripts...), run.Log),
	} {
		got, sink := importOnly(t, Options{}, paths...)
		if got.Tokens != truth || got.Responses != len(log) || got.TotalCost == nil || *got.TotalCost != cost {
			t.Errorf("%s: tokens %+v, %d responses, cost %v; want %+v, %d, %v", name, got.Tokens, got.Responses,
				costOf(got.TotalCost), truth, len(log), cost)
		}
		if diff := diffChunks(chunksOf(sink), want); diff != "" {
			t.Errorf("%s: chunks differ from the transcripts' alone:\n%s", name, diff)
		}
	}
	twice, sink := importOnly(t, Options{}, run.Log, copyOfLog)
	if twice.Tokens != streamOnly.Tokens || twice.Responses != streamOnly.Responses ||
		costOf(twice.TotalCost) != costOf(streamOnly.TotalCost) {
		t.Errorf("the log twice: %+v; once: %+v", twice, streamOnly)
	}
	if diff := diffChunks(chunksOf(sink), chunksOf(streamRef)); diff != "" {
		t.Errorf("the log twice: chunks differ from once:\n%s", diff)
	}
}

// diffChunks says how two chunk lists differ, "" when they do not.
func diffChunks(got, want []chunkView) string {
	var b strings.Builder
	for i := range max(len(got), len(want)) {
		var g, w chunkView
		if i < len(got) {
			g = got[i]
		}
		if i < len(want) {
			w = want[i]
		}
		if g != w {
			fmt.Fprintf(&b, "  %d: got %q\n     want %q\n", i, g, w)
		}
	}
	if b.Len() > 0 {
		fmt.Fprintf(&b, "  (%d chunks, want %d)", len(got), len(want))
	}
	return b.String()
}

// texts are a sink's stdout texts.
func texts(sink *memSink) []string {
	var out []string
	for _, v := range chunksOf(sink) {
		if v.Stream == "stdout" {
			out = append(out, v.Text)
		}
	}
	return out
}

// `claude -p --output-format json` writes the result object alone: its
// num_turns are the main thread's responses and its modelUsage names the
// model. A resumed session's two json outputs count each run's responses
// and keep each run's answer; with the transcript, the transcript's
// responses and prose count, once.
func TestRealClaudeJSON(t *testing.T) {
	srv := fakemodel.Start(t)
	c := apprig.NewClaude(t, srv, nil)
	srv.Anthropic(
		onMain(claudeTurnUsage(1), fakemodel.Tool("Bash", map[string]any{"command": "echo json", "description": "echo"})),
		onMain(claudeTurnUsage(2), fakemodel.Text("the first answer")),
		onMain(claudeTurnUsage(3), fakemodel.Text("the second answer")),
	)
	json := &apprig.RunOptions{Format: "json"}
	first := runClaude(t, srv, c, "first", json)
	n1 := len(srv.Log()) // the first run's responses
	second := runClaude(t, srv, c, "second", &apprig.RunOptions{Format: "json", Resume: first.SessionID})
	log := srv.Log()
	model := log[0].Model
	transcriptsOnly, ref := importOnly(t, Options{}, first.Transcripts...)
	cases := []struct {
		name      string
		paths     []string
		responses int
		tokens    accounting.Tokens
		texts     []string
	}{
		{"first", []string{first.Log}, n1, servedTokens(log[:n1]), []string{"the first answer\n"}},
		{"both", []string{first.Log, second.Log}, len(log), servedTokens(log), []string{"the first answer\n", "the second answer\n"}},
		// no times: the answers come in the order read
		{"both reversed", []string{second.Log, first.Log}, len(log), servedTokens(log), []string{"the second answer\n", "the first answer\n"}},
		{"both with the transcript", append([]string{first.Log, second.Log}, first.Transcripts...), len(log), servedTokens(log), texts(ref)},
	}
	for _, tc := range cases {
		got, sink := importOnly(t, Options{}, tc.paths...)
		if got.Responses != tc.responses || got.Model != model || got.Tokens != tc.tokens {
			t.Errorf("%s: %d responses, model %q, tokens %+v; want %d, %q, %+v", tc.name, got.Responses, got.Model,
				got.Tokens, tc.responses, model, tc.tokens)
		}
		if g := texts(sink); !slices.Equal(g, tc.texts) {
			t.Errorf("%s: prose %q, want %q", tc.name, g, tc.texts)
		}
	}
	if transcriptsOnly.Responses != len(log) {
		t.Errorf("the transcript alone: %d responses of %d", transcriptsOnly.Responses, len(log))
	}
}

// startEnd are the times on a sink's start and end.
func startEnd(t *testing.T, sink *memSink) (start, end time.Time) {
	t.Helper()
	var n int
	for _, e := range sink.envs {
		switch e.Type {
		case streams.TypeSessionStart:
			start, n = e.At, n+1
		case streams.TypeSessionEnd:
			end, n = e.At, n+1
		}
	}
	if n != 2 {
		t.Fatalf("%d starts and ends, want one of each", n)
	}
	return start, end
}

// A session's start and end are times its output carries, not the log
// file's modification time (the day it was copied, here a year on); with
// the transcript they are the transcript's. Output with no time at all
// (a run that called no tool) takes the file's time for both and says so.
func TestRealClaudeTimes(t *testing.T) {
	srv := fakemodel.Start(t)
	c := apprig.NewClaude(t, srv, nil)
	srv.Anthropic(
		onMain(claudeTurnUsage(1), fakemodel.Text("checking"), fakemodel.Tool("Bash", map[string]any{"command": "true", "description": "check"})),
		onMain(claudeTurnUsage(2), fakemodel.Text("fine")),
		onMain(claudeTurnUsage(3), fakemodel.Text("no tools, no times")),
	)
	timed := runClaude(t, srv, c, "check", nil)
	copied := timed.Ended.AddDate(1, 0, 0)
	if err := os.Chtimes(timed.Log, copied, copied); err != nil {
		t.Fatal(err)
	}
	got, sink := importOnly(t, Options{}, timed.Log)
	start, end := startEnd(t, sink)
	if start.Before(timed.Started) || end.After(timed.Ended) || end.Before(start) || got.Untimed {
		t.Errorf("the log alone: start %v, end %v (untimed %v); the run went from %v to %v",
			start, end, got.Untimed, timed.Started, timed.Ended)
	}
	checkDays(t, "the log alone", timed.Log, timed.Started, timed.Ended)
	_, ref := importOnly(t, Options{}, timed.Transcripts...)
	wantStart, wantEnd := startEnd(t, ref)
	_, sink = importOnly(t, Options{}, append([]string{timed.Log}, timed.Transcripts...)...)
	if start, end := startEnd(t, sink); !start.Equal(wantStart) || !end.Equal(wantEnd) {
		t.Errorf("with the transcript: start %v, end %v; the transcript's %v, %v", start, end, wantStart, wantEnd)
	}

	untimed := runClaude(t, srv, apprig.NewClaude(t, srv, nil), "no tools", nil)
	if err := os.Chtimes(untimed.Log, copied, copied); err != nil {
		t.Fatal(err)
	}
	got, sink = importOnly(t, Options{}, untimed.Log)
	start, end = startEnd(t, sink)
	if !start.Equal(copied.Truncate(time.Millisecond)) || !end.Equal(start) || !got.Untimed {
		t.Errorf("no times: start %v, end %v, untimed %v; want the file's %v for both, untimed", start, end, got.Untimed, copied)
	}
	checkDays(t, "no times", untimed.Log, copied, copied)
}

// checkDays: the import's perDay (what cost by day reads) puts all of the
// session's responses and tokens on the days from..to (UTC), every one of
// them equal to the session's own once summed.
func checkDays(t *testing.T, where, path string, from, to time.Time) {
	t.Helper()
	sum := run(t, &memSink{}, Options{}, path)
	var responses int
	var tokens accounting.Tokens
	for _, d := range sum.PerDay {
		if d.Date < from.UTC().Format(time.DateOnly) || d.Date > to.UTC().Format(time.DateOnly) {
			t.Errorf("%s: perDay %s, outside the run's %s to %s", where, d.Date, from.UTC().Format(time.DateOnly), to.UTC().Format(time.DateOnly))
		}
		responses += d.Responses
		tokens = addTokens(tokens, d.Tokens)
	}
	if s := sum.PerSession[0]; len(sum.PerSession) != 1 || responses != s.Responses || tokens != s.Tokens || responses == 0 {
		t.Errorf("%s: perDay sums to %d responses, %+v; the session has %d, %+v", where, responses, tokens, s.Responses, s.Tokens)
	}
}

// addTokens is a + b, count by count.
func addTokens(a, b accounting.Tokens) accounting.Tokens {
	return accounting.Tokens{Input: a.Input + b.Input, Output: a.Output + b.Output, CacheRead: a.CacheRead + b.CacheRead,
		CacheWrite: a.CacheWrite + b.CacheWrite, Reasoning: a.Reasoning + b.Reasoning, Total: a.Total + b.Total}
}

// billingOf is the billing on a sink's end.
func billingOf(t *testing.T, sink *memSink) string {
	t.Helper()
	e := ends(sink)
	if len(e) != 1 {
		t.Fatalf("%d ends, want 1", len(e))
	}
	return e[0].Billing
}

// Claude's system/init names the credential (apiKeySource): an API key is
// metered; "none" (a claude.ai login, measured with an OAuth token, or no
// credential) says nothing, so billing stays unknown; --billing overrides.
// Transcripts carry no such signal.
func TestRealClaudeBilling(t *testing.T) {
	srv := fakemodel.Start(t)
	srv.Anthropic(onMain(claudeTurnUsage(1), fakemodel.Text("metered")), onMain(claudeTurnUsage(2), fakemodel.Text("login")))
	key := runClaude(t, srv, apprig.NewClaude(t, srv, nil), "with a key", nil)
	login := runClaude(t, srv, apprig.NewClaude(t, srv, &apprig.ClaudeOptions{
		Env: []string{"ANTHROPIC_API_KEY=", "CLAUDE_CODE_OAUTH_TOKEN=dummy"}}), "with a login", nil)
	for _, tc := range []struct {
		run     *apprig.ClaudeRun
		source  string
		billing string
	}{{key, "ANTHROPIC_API_KEY", "metered"}, {login, "none", ""}} {
		if !bytes.Contains(tc.run.Stdout, []byte(`"apiKeySource":"`+tc.source+`"`)) {
			t.Fatalf("system/init does not say apiKeySource %s: %s", tc.source, tc.run.Stdout)
		}
		_, sink := importOnly(t, Options{}, tc.run.Log)
		if got := billingOf(t, sink); got != tc.billing {
			t.Errorf("apiKeySource %s: billing %q, want %q", tc.source, got, tc.billing)
		}
		_, sink = importOnly(t, Options{Billing: "subscription"}, tc.run.Log)
		if got := billingOf(t, sink); got != "subscription" {
			t.Errorf("apiKeySource %s with --billing subscription: billing %q", tc.source, got)
		}
	}
	_, sink := importOnly(t, Options{}, key.Transcripts...)
	if got := billingOf(t, sink); got != "" {
		t.Errorf("the transcript alone: billing %q, want unknown", got)
	}
	_, sink = importOnly(t, Options{}, append([]string{key.Log}, key.Transcripts...)...)
	if got := billingOf(t, sink); got != "metered" {
		t.Errorf("the log with the transcript: billing %q, want metered", got)
	}
}

// A scenario of the matrix: the turns scripted, the prompts run (the
// second and later resume the first), and the output format.
type claudeScenario struct {
	name    string
	mcp     bool
	format  string // "" (stream-json) or "json"
	prompts []string
	turns   func(dir string) []fakemodel.Turn
}

// step is a recorded action as the matrix compares it: what it did, to
// what, and what came of it.
type step struct {
	Action, Target, Output, Content string
	IsError, NoResult               bool
}

// toolResults are the tool results the app sent the model, by tool_use_id:
// what each call returned, as the log holds it.
func toolResults(t *testing.T, log []fakemodel.Served) map[string]step {
	t.Helper()
	out := map[string]step{}
	for _, r := range log {
		var req struct {
			Messages []struct {
				Content json.RawMessage `json:"content"`
			} `json:"messages"`
		}
		if err := json.Unmarshal(r.Request, &req); err != nil {
			t.Fatalf("request of %s: %v", r.ID, err)
		}
		for _, m := range req.Messages {
			var blocks []struct {
				Type      string          `json:"type"`
				ToolUseID string          `json:"tool_use_id"`
				Content   json.RawMessage `json:"content"`
				IsError   bool            `json:"is_error"`
			}
			_ = json.Unmarshal(m.Content, &blocks) // a string content holds no tool result
			for _, b := range blocks {
				if b.Type == "tool_result" {
					out[b.ToolUseID] = step{Output: resultText(b.Content), IsError: b.IsError}
				}
			}
		}
	}
	return out
}

// resultText is a tool_result's content as text: a string, or its text blocks.
func resultText(c json.RawMessage) string {
	var s string
	if json.Unmarshal(c, &s) == nil {
		return s
	}
	var blocks []struct {
		Text string `json:"text"`
	}
	_ = json.Unmarshal(c, &blocks)
	var b strings.Builder
	for _, x := range blocks {
		b.WriteString(x.Text)
	}
	return b.String()
}

// steps are the actions the scripted tool calls are recorded as, per run,
// in the order the model was asked for them: each served response's tool
// calls (by the script) with their results (by the log: what the app
// sent back). A Bash call's output, an MCP call's output and isError are
// the results'; a Write's content its input; a Read's content what the
// script wrote there before.
func (sc claudeScenario) steps(t *testing.T, turns []fakemodel.Turn, log []fakemodel.Served, runs []*apprig.ClaudeRun) [][]step {
	t.Helper()
	results := toolResults(t, log)
	written := map[string]string{}
	out := make([][]step, len(runs))
	for _, r := range log {
		run := slices.IndexFunc(runs, func(c *apprig.ClaudeRun) bool { return !r.Received.Before(c.Started) && !r.Received.After(c.Ended) })
		if run < 0 || r.Turn < 0 {
			t.Fatalf("response %s (turn %d) served outside every run", r.ID, r.Turn)
		}
		tool := 0
		for _, b := range turns[r.Turn].Blocks {
			if b.Kind != "tool" {
				continue
			}
			id := r.Tools[tool]
			tool++
			res, ok := results[id]
			if !ok {
				t.Fatalf("no tool result for %s (%s) in the log", id, b.Tool)
			}
			in, _ := b.Input.(map[string]any)
			switch {
			case b.Tool == "Bash":
				out[run] = append(out[run], step{Action: "command", Target: in["command"].(string), Output: res.Output})
			case b.Tool == "Read":
				path := in["file_path"].(string)
				out[run] = append(out[run], step{Action: "file_read", Target: path, Content: written[path]})
			case b.Tool == "Write":
				path, content := in["file_path"].(string), in["content"].(string)
				written[path] = content
				out[run] = append(out[run], step{Action: "file_write", Target: path, Content: content})
			case strings.HasPrefix(b.Tool, "mcp__"):
				out[run] = append(out[run], step{Action: "mcp_call", Target: b.Tool[strings.LastIndex(b.Tool, "__")+2:],
					Output: res.Output, IsError: res.IsError})
			}
		}
	}
	return out
}

// stepsOf are a sink's recorded actions, as steps names them, in order.
func stepsOf(sink *memSink) []step {
	var out []step
	for _, e := range sink.envs {
		ev := e.Event
		if e.Type != streams.TypeSessionChunk || ev == nil {
			continue
		}
		st := step{Action: ev.Action, Output: ev.Output, Content: ev.Content, IsError: ev.IsError, NoResult: ev.NoResult}
		switch ev.Action {
		case "command":
			st.Target = ev.Command
		case "file_read", "file_write":
			st.Target = ev.Path
		case "mcp_call":
			st.Target = ev.Tool
		}
		out = append(out, st)
	}
	return out
}

// Every scenario, every mix of its files: tokens, responses, cost, start,
// end, prompts and steps equal what the fake model served and the runs
// reported (the logs, the transcripts, both in either order). The truth per mix: tokens are every response served (the
// logs' report, or the transcripts' responses); responses are every one
// with the transcripts, else those the output shows; cost is the runs'
// sum when a log is imported, absent from transcripts alone; times fall
// within the runs and, with the transcripts, around every request; the
// prompts are in the transcripts only (print mode does not echo them);
// steps are every tool call that is an action (json output names none).
func TestRealClaudeMatrix(t *testing.T) {
	scenarios := []claudeScenario{
		{name: "tools", prompts: []string{"write, read and run"}, turns: func(dir string) []fakemodel.Turn {
			f := filepath.Join(dir, "a.txt")
			return []fakemodel.Turn{
				onMain(claudeTurnUsage(1), fakemodel.Thinking("plan"), fakemodel.Text("writing"),
					fakemodel.Tool("Write", map[string]any{"file_path": f, "content": "a\n"})),
				onMain(claudeTurnUsage(2), fakemodel.Tool("Read", map[string]any{"file_path": f})),
				onMain(claudeTurnUsage(3), fakemodel.Tool("Bash", map[string]any{"command": "cat a.txt", "description": "cat"})),
				onMain(claudeTurnUsage(4), fakemodel.Text("all done")),
			}
		}},
		{name: "subagent", prompts: []string{"delegate"}, turns: func(string) []fakemodel.Turn {
			return []fakemodel.Turn{
				onMain(claudeTurnUsage(1), fakemodel.Tool("Agent", map[string]any{"description": "d", "prompt": "run pwd", "subagent_type": "general-purpose"})),
				onSub(claudeTurnUsage(2), fakemodel.Tool("Bash", map[string]any{"command": "pwd", "description": "where"})),
				onSub(claudeTurnUsage(3), fakemodel.Text("in the work dir")),
				onMain(claudeTurnUsage(4), fakemodel.Text("it ran pwd")),
			}
		}},
		{name: "mcp", mcp: true, prompts: []string{"call the tools"}, turns: func(string) []fakemodel.Turn {
			return []fakemodel.Turn{
				onMain(claudeTurnUsage(1), fakemodel.Tool("mcp__spine__add", map[string]any{"a": 2, "b": 3})),
				onMain(claudeTurnUsage(2), fakemodel.Tool("mcp__spine__fail", map[string]any{"reason": "on purpose"})),
				onMain(claudeTurnUsage(3), fakemodel.Text("5, and one failure")),
			}
		}},
		{name: "resumed", prompts: []string{"first", "second"}, turns: func(string) []fakemodel.Turn {
			return []fakemodel.Turn{
				onMain(claudeTurnUsage(1), fakemodel.Tool("Bash", map[string]any{"command": "echo 1", "description": "one"})),
				onMain(claudeTurnUsage(2), fakemodel.Text("one")),
				onMain(claudeTurnUsage(3), fakemodel.Tool("Bash", map[string]any{"command": "echo 2", "description": "two"})),
				onMain(claudeTurnUsage(4), fakemodel.Text("two")),
			}
		}},
		// the resumed run's subagent uses more than the whole first run: its
		// process's total holds the first run's plus its own query's usage
		{name: "resumed, second run with a subagent", prompts: []string{"first", "second"}, turns: func(string) []fakemodel.Turn {
			return []fakemodel.Turn{
				onMain(claudeTurnUsage(1), fakemodel.Text("one")),
				onMain(claudeTurnUsage(2), fakemodel.Tool("Agent", map[string]any{"description": "d", "prompt": "run pwd", "subagent_type": "general-purpose"})),
				onSub(claudeTurnUsage(3), fakemodel.Tool("Bash", map[string]any{"command": "pwd", "description": "where"})),
				onSub(claudeTurnUsage(4), fakemodel.Text("in the work dir")),
				onMain(claudeTurnUsage(5), fakemodel.Text("two")),
			}
		}},
		{name: "json resumed", format: "json", prompts: []string{"first", "second"}, turns: func(string) []fakemodel.Turn {
			return []fakemodel.Turn{
				onMain(claudeTurnUsage(1), fakemodel.Tool("Bash", map[string]any{"command": "echo 1", "description": "one"})),
				onMain(claudeTurnUsage(2), fakemodel.Text("one")),
				onMain(claudeTurnUsage(3), fakemodel.Text("two")),
			}
		}},
	}
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) { sc.check(t) })
	}
}

// check runs the scenario and compares every mix of its files with the truth.
func (sc claudeScenario) check(t *testing.T) {
	srv := fakemodel.Start(t)
	c := apprig.NewClaude(t, srv, &apprig.ClaudeOptions{MCP: sc.mcp})
	turns := sc.turns(c.Dir)
	srv.Anthropic(turns...)
	var runs []*apprig.ClaudeRun
	var logs []string
	var costs []float64
	for i, p := range sc.prompts {
		o := &apprig.RunOptions{Format: sc.format}
		if i > 0 {
			o.Resume = runs[0].SessionID
		}
		r := runClaude(t, srv, c, p, o)
		runs, logs, costs = append(runs, r), append(logs, r.Log), append(costs, resultCost(t, r.Stdout))
	}
	cost := costs[0]
	for _, c := range costs[1:] {
		cost += c
	}
	log := srv.Log()
	if len(log) != len(turns) || len(srv.Scripted()) != len(turns) {
		t.Fatalf("served %d responses for %d turns: %+v", len(log), len(turns), log)
	}
	transcripts := runs[len(runs)-1].Transcripts
	perRun := sc.steps(t, turns, log, runs)
	shown := 0
	for _, r := range log {
		// the logs show the main thread's responses, and in stream-json a
		// subagent's that called a tool
		if r.Thread == fakemodel.ThreadMain || sc.format == "" && len(r.Tools) > 0 {
			shown++
		}
	}
	reversed := slices.Clone(logs)
	slices.Reverse(reversed)
	mixes := []struct {
		name        string
		paths       []string
		logs, trans bool
		cost        float64 // when logs; 0: every run's
	}{
		{"logs", logs, true, false, 0},
		{"logs reversed", reversed, true, false, 0},
		{"transcripts", transcripts, false, true, 0},
		{"logs, transcripts", append(slices.Clone(logs), transcripts...), true, true, 0},
		{"transcripts, logs reversed", append(slices.Clone(transcripts), reversed...), true, true, 0},
	}
	if len(logs) > 1 { // the transcript holds every run; one run's log is missing
		mixes = append(mixes, struct {
			name        string
			paths       []string
			logs, trans bool
			cost        float64
		}{"transcripts, the last log", append(slices.Clone(transcripts), logs[len(logs)-1]), true, true, costs[len(costs)-1]})
	}
	for _, m := range mixes {
		got, sink := importOnly(t, Options{}, m.paths...)
		where := fmt.Sprintf("%s (%d files)", m.name, len(m.paths))
		if got.Tokens != servedTokens(log) {
			t.Errorf("%s: tokens %+v, served %+v", where, got.Tokens, servedTokens(log))
		}
		if e := ends(sink); len(e) != 1 || e[0].Usage == nil || report(*e[0].Usage) != got.Tokens ||
			costOf(e[0].TotalCost) != costOf(got.TotalCost) {
			t.Errorf("%s: the end (the router-call row's source) says %+v, the summary %+v", where, e, got)
		}
		wantResponses := shown
		if m.trans {
			wantResponses = len(log)
		}
		if got.Responses != wantResponses {
			t.Errorf("%s: %d responses, want %d of the %d served", where, got.Responses, wantResponses, len(log))
		}
		wantCost := cmp.Or(m.cost, cost) // a cost is what the imported logs reported
		switch {
		case m.logs && (got.TotalCost == nil || math.Abs(*got.TotalCost-wantCost) > 1e-12):
			t.Errorf("%s: cost %v, the logs reported %v", where, costOf(got.TotalCost), wantCost)
		case !m.logs && got.TotalCost != nil:
			t.Errorf("%s: cost %v from transcripts, which report none", where, *got.TotalCost)
		}
		if partial := m.cost != 0; got.CostPartial != partial { // m.cost: the imported logs are some runs'
			t.Errorf("%s: costPartial %v, want %v", where, got.CostPartial, partial)
		}
		// with the transcripts the steps come in the order asked for;
		// from logs alone, run by run in the order the logs are read
		var want []step
		switch {
		case sc.format == "json" && !m.trans: // the result object alone names no tool call
		case m.trans:
			want = slices.Concat(perRun...)
		default:
			for _, p := range m.paths {
				want = append(want, perRun[slices.Index(logs, p)]...)
			}
		}
		if g := stepsOf(sink); !slices.Equal(g, want) {
			t.Errorf("%s: steps\n  %+v\nwant\n  %+v", where, g, want)
		}
		sc.checkTimes(t, where, sink, got, runs, log, m.trans)
		sc.checkPrompts(t, where, sink, m.trans)
	}
}

// checkTimes: within the runs; with the transcripts, around every request.
func (sc claudeScenario) checkTimes(t *testing.T, where string, sink *memSink, got Imported, runs []*apprig.ClaudeRun, log []fakemodel.Served, trans bool) {
	t.Helper()
	start, end := startEnd(t, sink)
	if end.Before(start) {
		t.Errorf("%s: end %v before start %v", where, end, start)
	}
	if got.Untimed {
		if trans || sc.format != "json" {
			t.Errorf("%s: untimed, though the files carry times", where)
		}
		return
	}
	if first, last := runs[0].Started.Truncate(time.Millisecond), runs[len(runs)-1].Ended; start.Before(first) || end.After(last) {
		t.Errorf("%s: %v to %v, outside the runs' %v to %v", where, start, end, first, last)
	}
	if trans && (start.After(log[0].Received) || end.Before(log[len(log)-1].Received)) {
		t.Errorf("%s: %v to %v does not hold the requests, %v to %v", where, start, end, log[0].Received, log[len(log)-1].Received)
	}
}

// checkPrompts: the transcripts' first prompt is the start's, later ones
// the user's prose; the logs carry none.
func (sc claudeScenario) checkPrompts(t *testing.T, where string, sink *memSink, trans bool) {
	t.Helper()
	var prompt string
	for _, e := range sink.envs {
		if e.Type == streams.TypeSessionStart {
			prompt = e.Prompt
		}
	}
	prose := strings.Join(texts(sink), "")
	if !trans {
		if prompt != "" {
			t.Errorf("%s: prompt %q from logs that carry none", where, prompt)
		}
		return
	}
	if prompt != sc.prompts[0] {
		t.Errorf("%s: prompt %q, want %q", where, prompt, sc.prompts[0])
	}
	for _, p := range sc.prompts[1:] {
		if !strings.Contains(prose, "\n> "+p+"\n") {
			t.Errorf("%s: the resumed prompt %q is not in the prose %q", where, p, prose)
		}
	}
}
