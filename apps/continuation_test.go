package apps

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spinehq/spine/streams"
)

// logSink is a session log: what it holds is what Recorded says, as
// spine's projection would (its end's usage and cost included).
type logSink struct{ envs []*streams.Envelope }

func (l *logSink) Recorded(_ context.Context, id string) (Recorded, error) {
	var r Recorded
	for _, e := range l.envs {
		if e.SessionID != id {
			continue
		}
		switch e.Type {
		case streams.TypeSessionStart:
			r.Started, r.Kind = true, e.Kind
		case streams.TypeSessionChunk:
			r.LastSeq = max(r.LastSeq, e.Seq)
		case streams.TypeSessionUsage:
			if !r.Ended {
				r.Usage, r.Cost = e.Usage, e.TotalCost
			}
		case streams.TypeSessionEnd:
			r.Ended, r.Usage, r.Cost = true, e.Usage, e.TotalCost
		}
	}
	return r, nil
}

func (l *logSink) Publish(_ context.Context, e *streams.Envelope) error {
	if err := e.Validate(); err != nil {
		return err
	}
	if slices.ContainsFunc(l.envs, func(x *streams.Envelope) bool { return x.ID == e.ID }) {
		return nil // the log's duplicate window
	}
	l.envs = append(l.envs, e)
	return nil
}

// sessions are the spine sessions in the log, in the order started.
func (l *logSink) sessions() []string {
	var ids []string
	for _, e := range l.envs {
		if e.Type == streams.TypeSessionStart {
			ids = append(ids, e.SessionID)
		}
	}
	return ids
}

func (l *logSink) of(id, typ string) []*streams.Envelope {
	var out []*streams.Envelope
	for _, e := range l.envs {
		if e.SessionID == id && e.Type == typ {
			out = append(out, e)
		}
	}
	return out
}

// claudeLine is one Claude Code transcript line of session c-1: a
// prompt, or a response of text with its usage (n tokens of each kind).
func claudeLine(i int, text string, n int64) string {
	at := time.Date(2026, 12, 1, 9, 0, i, 0, time.UTC).Format(time.RFC3339)
	if n == 0 {
		return fmt.Sprintf(`{"type":"user","sessionId":"c-1","uuid":"u%d","timestamp":%q,"cwd":"/w","message":{"role":"user","content":%q}}`, i, at, text)
	}
	return fmt.Sprintf(`{"type":"assistant","sessionId":"c-1","uuid":"u%d","timestamp":%q,"requestId":"r%d","message":{"id":"m%d","model":"claude-x",`+
		`"role":"assistant","content":[{"type":"text","text":%q}],"usage":{"input_tokens":%d,"output_tokens":%d,"cache_creation_input_tokens":%d,"cache_read_input_tokens":%d}}}`,
		i, at, i, i, text, n, n, n, n)
}

// feed translates lines as one source, in order.
func feed(t *testing.T, tr *Translator, st *Stream, lines []string) {
	t.Helper()
	for i, l := range lines {
		if _, err := st.Record(context.Background(), Record{N: i + 1, Data: []byte(l)}); err != nil {
			t.Fatal(err)
		}
	}
}

func always([]string) bool { return true }

// A session ended as quiet (EndQuiet) and then grown again is recorded as
// a continuation: a new spine session with the same appSessionRef, its
// chunks numbered from 1, its usage only what came after the end. A
// re-read of the whole file (spine import, a restarted collector) on the
// same log makes the same sessions: nothing, when it holds everything; the
// continuation alone, identical, when it holds only what came before.
func TestContinuationAfterQuietEnd(t *testing.T) {
	ctx := context.Background()
	first := []string{claudeLine(0, "do one", 0), claudeLine(1, "one done", 1)}
	later := []string{claudeLine(2, "do two", 0), claudeLine(3, "two done", 10)}
	opts := func(sink Sink) Options { return Options{Owner: streams.Owner{Org: "o", Member: "m"}, Sink: sink} }
	src := Source{Path: "/h/.claude/projects/p/c-1.jsonl", Format: FormatClaudeTranscript}

	live := &logSink{}
	tr := NewTranslator(opts(live))
	st := tr.Stream(src)
	feed(t, tr, st, first)
	if ended, err := tr.EndQuiet(ctx, always); err != nil || !slices.Equal(ended, []string{"c-1"}) {
		t.Fatalf("quiet end: ended %v, %v", ended, err)
	}
	before := slices.Clone(live.envs)
	if ended, err := tr.EndQuiet(ctx, always); err != nil || len(live.envs) != len(before) || len(ended) != 0 {
		t.Fatalf("a second quiet end with nothing new published %d envelopes, ended %v (%v)", len(live.envs)-len(before), ended, err)
	}
	feed(t, tr, st, later)
	if err := tr.Finish(ctx); err != nil {
		t.Fatal(err)
	}

	cont := ContinuationID("claude-code", "c-1", 1, 0)
	if got := live.sessions(); !slices.Equal(got, []string{"c-1", cont}) || cont != "c-1-c1" {
		t.Fatalf("sessions %v, want c-1 and its continuation %s", got, cont)
	}
	start := live.of(cont, streams.TypeSessionStart)[0]
	if start.AppSessionRef != "c-1" || start.Prompt != "" {
		t.Fatalf("continuation start: ref %q prompt %q", start.AppSessionRef, start.Prompt)
	}
	chunks := live.of(cont, streams.TypeSessionChunk)
	if len(chunks) != 2 || chunks[0].Seq != 1 || chunks[0].Text != "\n> do two\n" || chunks[1].Text != "two done\n" {
		t.Fatalf("continuation chunks: %d, %+v", len(chunks), chunks)
	}
	wantUsage := map[string]int64{"c-1": 1, cont: 10} // each only its own responses
	for id, n := range wantUsage {
		end := live.of(id, streams.TypeSessionEnd)
		if len(end) != 1 || end[0].Usage == nil || !end[0].Usage.SameCounts(streams.Usage{InputTokens: n, OutputTokens: n, CacheReadTokens: n, CacheWriteTokens: n}) {
			t.Fatalf("%s ends %+v, want usage %d of each", id, end, n)
		}
	}

	// spine import of the whole file afterwards: nothing new.
	tr = NewTranslator(opts(live))
	feed(t, tr, tr.Stream(src), append(slices.Clone(first), later...))
	if err := tr.Finish(ctx); err != nil {
		t.Fatal(err)
	}
	if n := len(live.envs) - len(before) - 4; n != 0 {
		t.Fatalf("re-import published %d envelopes", n)
	}
	// spine import when the log holds only the first part: the same
	// continuation, envelope for envelope.
	part := &logSink{envs: slices.Clone(before)}
	tr = NewTranslator(opts(part))
	feed(t, tr, tr.Stream(src), append(slices.Clone(first), later...))
	if err := tr.Finish(ctx); err != nil {
		t.Fatal(err)
	}
	if len(part.envs) != len(live.envs) {
		t.Fatalf("import after the quiet end holds %d envelopes, want %d", len(part.envs), len(live.envs))
	}
	for i := range live.envs {
		a, b := *live.envs[i], *part.envs[i]
		a.At, b.At = time.Time{}, time.Time{} // a continuation's start is the time of what opened it
		x, _ := a.Marshal()
		y, _ := b.Marshal()
		if string(x) != string(y) {
			t.Fatalf("envelope %d differs:\n%s\n%s", i, x, y)
		}
	}
}

// spine run of a resumed app session (Options.NewOutput, a new process's
// output): the session spine ended is continued, not read again, so the
// new process's chunks are not taken for the ones recorded; its usage is
// what the new process reported: a Claude process reports its own, a
// Codex thread its running total, less what the ended session had.
func TestContinuationOfNewOutput(t *testing.T) {
	ctx := context.Background()
	runs := []struct {
		name, ref string
		format    Format
		first     []string
		resumed   []string
		want      streams.Usage
		wantCost  *float64
	}{
		{"claude --resume", "s-live", FormatClaudeStream, liveRuns[0].lines, []string{
			`{"type":"system","subtype":"init","session_id":"s-live","cwd":"/w","model":"claude-sonnet-4-5","apiKeySource":"none"}`,
			`{"type":"assistant","session_id":"s-live","uuid":"u3","message":{"id":"m2","role":"assistant","model":"claude-sonnet-4-5",` +
				`"content":[{"type":"text","text":"five"}],"usage":{"input_tokens":5,"output_tokens":4}}}`,
			`{"type":"result","subtype":"success","session_id":"s-live","uuid":"u4","result":"five","num_turns":1,` +
				`"total_cost_usd":0.02,"usage":{"input_tokens":5,"output_tokens":4}}`,
		}, streams.Usage{InputTokens: 5, OutputTokens: 4}, new(0.02)},
		{"codex exec resume", "t-live", FormatCodexExec, liveRuns[1].lines, []string{
			`{"type":"thread.started","thread_id":"t-live"}`,
			`{"type":"turn.started"}`,
			`{"type":"item.completed","item":{"id":"item_0","type":"agent_message","text":"5"}}`,
			`{"type":"turn.completed","usage":{"input_tokens":25,"cached_input_tokens":0,"output_tokens":16}}`,
		}, streams.Usage{InputTokens: 15, OutputTokens: 9}, nil},
	}
	for _, r := range runs {
		log := &logSink{}
		for _, lines := range [][]string{r.first, r.resumed} {
			tr := NewTranslator(Options{Owner: streams.Owner{Org: "o", Member: "m"}, Sink: log, Live: true, NewOutput: true})
			st := tr.Stream(Source{Path: r.name, ModTime: time.Now(), Format: r.format})
			feed(t, tr, st, lines)
			if err := st.Done(ctx); err != nil {
				t.Fatal(err)
			}
			if err := tr.Finish(ctx); err != nil {
				t.Fatal(err)
			}
		}
		cont := ContinuationID(r.format.App(), r.ref, 1, 0)
		if got := log.sessions(); !slices.Equal(got, []string{r.ref, cont}) {
			t.Fatalf("%s: sessions %v, want %s and %s", r.name, got, r.ref, cont)
		}
		chunks, end := log.of(cont, streams.TypeSessionChunk), log.of(cont, streams.TypeSessionEnd)
		if len(chunks) != 1 || chunks[0].Seq != 1 || len(end) != 1 || end[0].Usage == nil || !end[0].Usage.SameCounts(r.want) {
			t.Fatalf("%s: continuation chunks %d, ends %+v, want usage %+v", r.name, len(chunks), end, r.want)
		}
		if c := end[0].TotalCost; (c == nil) != (r.wantCost == nil) || c != nil && *c != *r.wantCost {
			t.Fatalf("%s: continuation cost %v, want %v", r.name, c, r.wantCost)
		}
	}
}

// With Options.Live each record that changes a started session's usage
// publishes a session.usage with the usage so far (a record that changes
// nothing, none); a continuation's is only its own; without Live there is
// none.
func TestLiveRunningUsage(t *testing.T) {
	ctx := context.Background()
	lines := []string{claudeLine(0, "do one", 0), claudeLine(1, "one done", 1), claudeLine(2, "again", 0),
		claudeLine(3, "two done", 10)}
	usages := func(l *logSink, id string) []int64 {
		var out []int64
		for _, e := range l.of(id, streams.TypeSessionUsage) {
			out = append(out, e.Usage.InputTokens)
		}
		return out
	}
	for _, live := range []bool{true, false} {
		log := &logSink{}
		tr := NewTranslator(Options{Owner: streams.Owner{Org: "o", Member: "m"}, Sink: log, Live: live})
		st := tr.Stream(Source{Path: "/p/c-1.jsonl", Format: FormatClaudeTranscript})
		feed(t, tr, st, lines[:2])
		if _, err := tr.EndQuiet(ctx, always); err != nil {
			t.Fatal(err)
		}
		feed(t, tr, st, lines[2:])
		if err := tr.Finish(ctx); err != nil {
			t.Fatal(err)
		}
		want := map[string][]int64{"c-1": {1}, "c-1-c1": {10}}
		if !live {
			want = map[string][]int64{"c-1": nil, "c-1-c1": nil}
		}
		for id, w := range want {
			if got := usages(log, id); !slices.Equal(got, w) {
				t.Fatalf("live=%v: %s's running usage %v, want %v", live, id, got, w)
			}
		}
	}
}

// Codex's records name their session on the first line only (a rollout's
// session_meta, an exec log's thread.started): the usage its later lines
// report is published as it changes all the same, one session.usage per
// new total, the last equal to the end's.
func TestLiveRunningUsageCodex(t *testing.T) {
	ctx := context.Background()
	rollout, err := os.ReadFile(filepath.Join("..", "..", "shared", "fixtures", "codex-rollout", "tomjnsn-agentlogs__codex_crud.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	exec := append(slices.Clone(liveRuns[1].lines), `{"type":"turn.started"}`,
		`{"type":"item.completed","item":{"id":"item_1","type":"agent_message","text":"5"}}`,
		`{"type":"turn.completed","usage":{"input_tokens":30,"cached_input_tokens":0,"output_tokens":9}}`)
	runs := []struct {
		name   string
		format Format
		path   string
		lines  []string
	}{
		{"rollout", FormatCodexRollout, "/h/.codex/sessions/rollout-crud.jsonl", strings.Split(strings.TrimSpace(string(rollout)), "\n")},
		{"exec", FormatCodexExec, "codex output", exec},
	}
	for _, r := range runs {
		log := &logSink{}
		var ended *Ended
		tr := NewTranslator(Options{Owner: streams.Owner{Org: "o", Member: "m"}, Sink: log, Live: true,
			Ended: func(e *Ended) { ended = e }})
		st := tr.Stream(Source{Path: r.path, ModTime: time.Now(), Format: r.format})
		feed(t, tr, st, r.lines)
		if err := st.Done(ctx); err != nil {
			t.Fatal(err)
		}
		if err := tr.Finish(ctx); err != nil {
			t.Fatal(err)
		}
		id := ended.SessionID
		usage, end := log.of(id, streams.TypeSessionUsage), log.of(id, streams.TypeSessionEnd)
		if len(usage) == 0 || len(usage) != ended.Responses || len(end) != 1 ||
			!usage[len(usage)-1].Usage.SameCounts(*end[0].Usage) {
			t.Fatalf("%s: %d session.usage for %d responses (the last %+v, the end %+v)", r.name, len(usage), ended.Responses,
				usage, end)
		}
	}
}

// With Options.LeaveRun an app session spine run records (kind run) is
// not published at all: neither when spine holds it before the first
// record, nor when spine run starts its continuation after the
// translation ended the session as quiet (asked again before the
// continuation's start). Without it, both would be written to.
func TestLeaveRun(t *testing.T) {
	ctx := context.Background()
	first := []string{claudeLine(0, "do one", 0), claudeLine(1, "one done", 1)}
	later := []string{claudeLine(2, "do two", 0), claudeLine(3, "two done", 10)}
	src := Source{Path: "/h/.claude/projects/p/c-1.jsonl", Format: FormatClaudeTranscript}
	owner := streams.Owner{Org: "o", Member: "m"}
	runStart := func(id string) *streams.Envelope {
		return &streams.Envelope{V: streams.Version, Type: streams.TypeSessionStart, ID: id + "-run-start", At: time.Now(),
			SessionID: id, App: "claude-code", Kind: "run", AppSessionRef: "c-1", Owner: &owner}
	}
	for _, leave := range []bool{true, false} {
		log := &logSink{envs: []*streams.Envelope{runStart("c-1")}}
		tr := NewTranslator(Options{Owner: owner, Sink: log, Live: true, LeaveRun: leave})
		feed(t, tr, tr.Stream(src), first)
		if err := tr.Finish(ctx); err != nil {
			t.Fatal(err)
		}
		if n := len(log.envs) - 1; (n == 0) != leave {
			t.Fatalf("leave=%v: %d envelopes published to spine run's session", leave, n)
		}

		log = &logSink{}
		tr = NewTranslator(Options{Owner: owner, Sink: log, Live: true, LeaveRun: leave})
		st := tr.Stream(src)
		feed(t, tr, st, first)
		if _, err := tr.EndQuiet(ctx, always); err != nil {
			t.Fatal(err)
		}
		log.envs = append(log.envs, runStart(ContinuationID("claude-code", "c-1", 1, 0)))
		n := len(log.envs)
		feed(t, tr, st, later)
		if err := tr.Finish(ctx); err != nil {
			t.Fatal(err)
		}
		if got := len(log.envs) - n; (got == 0) != leave {
			t.Fatalf("leave=%v: %d envelopes published after spine run began the continuation", leave, got)
		}
	}
}

// New output (Options.NewOutput) of an app session whose spine session
// another process holds open — started, not ended: a spine run killed
// before its end left its spool, a collector recording it — goes to a
// continuation, never into that session: its end would cross the other
// one's under one id. The held session's usage so far is subtracted where
// the app reports the thread's running total (Codex).
func TestNewOutputPassesOverAHeldSession(t *testing.T) {
	ctx := context.Background()
	runs := []struct {
		name, ref string
		format    Format
		first     []string
		resumed   []string
		want      streams.Usage
	}{
		{"claude", "s-live", FormatClaudeStream, liveRuns[0].lines[:2], []string{
			`{"type":"system","subtype":"init","session_id":"s-live","cwd":"/w","model":"claude-sonnet-4-5","apiKeySource":"none"}`,
			`{"type":"assistant","session_id":"s-live","uuid":"u3","message":{"id":"m2","role":"assistant","model":"claude-sonnet-4-5",` +
				`"content":[{"type":"text","text":"five"}],"usage":{"input_tokens":5,"output_tokens":4}}}`,
			`{"type":"result","subtype":"success","session_id":"s-live","uuid":"u4","result":"five","num_turns":1,` +
				`"total_cost_usd":0.02,"usage":{"input_tokens":5,"output_tokens":4}}`,
		}, streams.Usage{InputTokens: 5, OutputTokens: 4}},
		{"codex", "t-live", FormatCodexExec, liveRuns[1].lines, []string{
			`{"type":"thread.started","thread_id":"t-live"}`,
			`{"type":"turn.started"}`,
			`{"type":"item.completed","item":{"id":"item_0","type":"agent_message","text":"5"}}`,
			`{"type":"turn.completed","usage":{"input_tokens":25,"cached_input_tokens":0,"output_tokens":16}}`,
		}, streams.Usage{InputTokens: 15, OutputTokens: 9}},
	}
	for _, r := range runs {
		log := &logSink{}
		// The first process's output, its end never sent.
		tr := NewTranslator(Options{Owner: streams.Owner{Org: "o", Member: "m"}, Sink: log, Live: true, NewOutput: true})
		feed(t, tr, tr.Stream(Source{Path: "first", ModTime: time.Now(), Format: r.format}), r.first)
		held := len(log.of(r.ref, streams.TypeSessionChunk))

		tr = NewTranslator(Options{Owner: streams.Owner{Org: "o", Member: "m"}, Sink: log, Live: true, NewOutput: true})
		st := tr.Stream(Source{Path: "resumed", ModTime: time.Now(), Format: r.format})
		feed(t, tr, st, r.resumed)
		if err := st.Done(ctx); err != nil {
			t.Fatal(err)
		}
		if err := tr.Finish(ctx); err != nil {
			t.Fatal(err)
		}
		cont := ContinuationID(r.format.App(), r.ref, int64(held), 0)
		if n := len(log.of(r.ref, streams.TypeSessionChunk)); n != held || len(log.of(r.ref, streams.TypeSessionEnd)) != 0 {
			t.Fatalf("%s: the held session got %d more chunks and %d ends", r.name, n-held, len(log.of(r.ref, streams.TypeSessionEnd)))
		}
		end := log.of(cont, streams.TypeSessionEnd)
		if got := log.sessions(); !slices.Equal(got, []string{r.ref, cont}) || len(end) != 1 || !end[0].Usage.SameCounts(r.want) {
			t.Fatalf("%s: sessions %v, continuation ends %+v, want usage %+v", r.name, got, end, r.want)
		}
	}
}

// A session spine ended behind the translation's back (the server's idle
// sweeper, while the collector's machine slept) takes nothing more once
// Recheck has asked: later records are its continuation, whose usage is
// only what came past the usage the ended session kept. Without Recheck
// they would go to the ended session.
func TestRecheckAfterASweptEnd(t *testing.T) {
	ctx := context.Background()
	first := []string{claudeLine(0, "do one", 0), claudeLine(1, "one done", 1)}
	later := []string{claudeLine(2, "do two", 0), claudeLine(3, "two done", 10)}
	log := &logSink{}
	tr := NewTranslator(Options{Owner: streams.Owner{Org: "o", Member: "m"}, Sink: log, Live: true})
	st := tr.Stream(Source{Path: "/h/.claude/projects/p/c-1.jsonl", Format: FormatClaudeTranscript})
	feed(t, tr, st, first)
	shown := log.of("c-1", streams.TypeSessionUsage)
	// The sweeper's end: no usage of its own; spine keeps the running one.
	log.envs = append(log.envs, &streams.Envelope{V: streams.Version, Type: streams.TypeSessionEnd, ID: "swept", At: time.Now(),
		SessionID: "c-1", Status: "timeout", Usage: shown[len(shown)-1].Usage})
	if err := tr.Recheck(ctx); err != nil {
		t.Fatal(err)
	}
	feed(t, tr, st, later)
	if err := tr.Finish(ctx); err != nil {
		t.Fatal(err)
	}
	cont := ContinuationID("claude-code", "c-1", 1, 0)
	if n := len(log.of("c-1", streams.TypeSessionChunk)); n != 1 || len(log.of("c-1", streams.TypeSessionEnd)) != 1 {
		t.Fatalf("the swept session got %d chunks, %d ends", n, len(log.of("c-1", streams.TypeSessionEnd)))
	}
	end := log.of(cont, streams.TypeSessionEnd)
	n := int64(10)
	if len(end) != 1 || !end[0].Usage.SameCounts(streams.Usage{InputTokens: n, OutputTokens: n, CacheReadTokens: n, CacheWriteTokens: n}) {
		t.Fatalf("continuation %s ends %+v, want usage 10 of each", cont, end)
	}
}

// With Options.UsageByPass the running usage waits for PublishUsage: one
// session.usage per session however many records changed it, none when
// nothing changed since, none for a session skip names.
func TestUsageByPass(t *testing.T) {
	ctx := context.Background()
	lines := []string{claudeLine(0, "do one", 0), claudeLine(1, "one done", 1), claudeLine(2, "again", 0),
		claudeLine(3, "two done", 10)}
	log := &logSink{}
	tr := NewTranslator(Options{Owner: streams.Owner{Org: "o", Member: "m"}, Sink: log, Live: true, UsageByPass: true})
	st := tr.Stream(Source{Path: "/p/c-1.jsonl", Format: FormatClaudeTranscript})
	feed(t, tr, st, lines)
	if n := len(log.of("c-1", streams.TypeSessionUsage)); n != 0 {
		t.Fatalf("%d session.usage before PublishUsage", n)
	}
	for range 2 {
		if err := tr.PublishUsage(ctx, nil); err != nil {
			t.Fatal(err)
		}
	}
	if u := log.of("c-1", streams.TypeSessionUsage); len(u) != 1 || u[0].Usage.InputTokens != 11 {
		t.Fatalf("session.usage after two passes: %+v, want one of 11", u)
	}
	feed(t, tr, st, []string{claudeLine(4, "three done", 5)})
	if err := tr.PublishUsage(ctx, func([]string) bool { return true }); err != nil {
		t.Fatal(err)
	}
	if n := len(log.of("c-1", streams.TypeSessionUsage)); n != 1 {
		t.Fatalf("%d session.usage after a skipped pass", n)
	}
}

// claimSink is a log whose sessions in claims another producer has claimed.
type claimSink struct {
	*logSink
	claims map[string]bool
}

func (c *claimSink) Claimed(id string) bool { return c.claims[id] }

// A session this translation holds open that spine run claims (it resumes
// the app session as a new process) is ended before the next record, with
// what it had, and nothing more of it is published: the resumed process is
// spine run's to record. Without LeaveRun it goes on.
func TestClaimedWhileOpen(t *testing.T) {
	ctx := context.Background()
	first := []string{claudeLine(0, "do one", 0), claudeLine(1, "one done", 1)}
	later := []string{claudeLine(2, "do two", 0), claudeLine(3, "two done", 10)}
	for _, leave := range []bool{true, false} {
		sink := &claimSink{logSink: &logSink{}, claims: map[string]bool{}}
		tr := NewTranslator(Options{Owner: streams.Owner{Org: "o", Member: "m"}, Sink: sink, Live: true, LeaveRun: leave})
		st := tr.Stream(Source{Path: "/h/.claude/projects/p/c-1.jsonl", Format: FormatClaudeTranscript})
		feed(t, tr, st, first)
		sink.claims["c-1"] = true
		n := len(sink.of("c-1", streams.TypeSessionChunk))
		feed(t, tr, st, later)
		if err := tr.Finish(ctx); err != nil {
			t.Fatal(err)
		}
		end := sink.of("c-1", streams.TypeSessionEnd)
		more := len(sink.of("c-1", streams.TypeSessionChunk)) - n
		if leave && (more != 0 || len(end) != 1 || end[0].Usage.InputTokens != 1 || len(sink.sessions()) != 1) {
			t.Fatalf("claimed while open: %d more chunks, ends %+v, sessions %v", more, end, sink.sessions())
		}
		if !leave && more == 0 {
			t.Fatal("without LeaveRun the session took nothing more")
		}
	}
}
