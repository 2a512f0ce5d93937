package apps

import (
	"bytes"
	"container/list"
	"context"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	json "github.com/spinehq/spine/internal/fastjson"

	"github.com/spinehq/spine/library"
	"github.com/spinehq/spine/streams"
)

// Bounds on what one session holds in memory and puts in one envelope.
const (
	maxPendingCalls = 4096      // tool calls waiting for their result
	maxRawReports   = 256       // verbatim usage reports kept for usage.raw
	maxOutput       = 256 << 10 // command or tool output kept on an event
	maxInlineFile   = 2 << 20   // larger file content travels as a digest
	// maxRawBytes keeps usage.raw under its bound with room for the
	// {"format", "reports", "reportsOmitted"} around the reports.
	maxRawBytes = streams.MaxUsageRawLen - 1<<10
)

// session is one app session being imported: its place in the sequence,
// its pending tool calls and the usage it reported. It is small: content
// passes straight through to the sink, and the prompt and workspace are
// dropped once the start is published.
type session struct {
	tr        *Translator
	lru       *list.Element // in Translator.oneFile, for one-file formats
	n         int32         // ordinal in the import: Translator.order's index
	closed    bool          // ended and dropped (Translator.close)
	run       bool          // kind "run" (a headless run), else "open"
	begun     bool          // there is something to record
	started   bool          // spine was asked where it is recorded (resolve)
	baseEnded bool          // spine held its own session ended: what it had is passed over
	published bool          // this translation published something of it
	left      bool          // another producer records it (Options.LeaveRun): nothing is published
	usageDue  bool          // a record may have changed its usage since PublishUsage (Options.UsageByPass)
	sawProse  bool
	id, appID string
	format    Format
	pre       *preStart // until the start is published
	workspace string    // for a continuation's start
	files     []string
	rec       recording   // the spine session written to now (see continuation.go)
	shown     *shownUsage // the running usage published last (Options.Live)

	startAt, lastAt time.Time
	fallback        int64 // the first file's modification time (Unix ms), for sources without times
	seq             int64 // the translation's chunks so far

	tokens     streams.Usage  // sum of the final usage of each response
	report     *streams.Usage // the app's own session total, when it gave one
	cumulative *streams.Usage // Codex rollouts: the last total_token_usage
	raw        *rawReports
	responses  int
	days       []dayUsage // this session's share of each UTC day

	model, effort string
	billing       string // the app's own billing signal, "" when silent (Options.Billing overrides)
	cost          *float64
	status, err   string
	exitCode      *int

	calls *calls // waiting for their results; nil when none

	claude *claudeRuns // what stream-json results reported; nil before the first

	// held are a one-file session's envelopes kept back until it is closed
	// (see Translator.hold); streaming once they were released early.
	held      []*streams.Envelope
	heldBytes int
	streaming bool
}

// preStart is what only the start carries.
type preStart struct {
	prompt, workspace string
}

// rawReports are the app's usage reports kept verbatim for usage.raw.
type rawReports struct {
	list  []json.RawMessage
	more  int // reports beyond maxRawReports or maxRawBytes, left out
	bytes int // the kept reports' bytes, commas included
}

// calls are a session's tool calls waiting for their results, oldest first.
type calls struct {
	byID  map[string]*pendingCall
	order []string
}

// app is the session's app.
func (s *session) app() string { return s.format.App() }

// setWorkspace sets the start's workspace, until the start is published.
func (s *session) setWorkspace(w string) {
	if s.workspace == "" {
		s.workspace = w
	}
	if !s.started && w != "" {
		if s.pre == nil {
			s.pre = &preStart{}
		}
		s.pre.workspace = w
	}
}

// pendingCall is a tool call waiting for its result; build turns the
// result into the event the cockpit would have published.
type pendingCall struct {
	at    time.Time
	build func(callResult) []*streams.Event
}

// callResult is what came back from a tool call.
type callResult struct {
	text       string          // the result, as text; see output
	content    json.RawMessage // Claude's tool_result content, decoded only when needed (output)
	isError    bool
	structured json.RawMessage // Claude Code's toolUseResult, when present
	// exitCode is a Codex command's, as its output states it (toolOutput,
	// read once with text: a long output decoded twice was a third of a
	// rollout's parsing, docs/performance.md#realistic-history).
	exitCode *int
	missing  bool // nothing came back: the source ends, or too many calls wait, before it
}

// output is the result's text: Claude's tool_result content is decoded
// only when an action asks for it, since most take a command's stdout or a
// file's content from toolUseResult instead, and a long output decoded
// for nothing is most of an import's time (docs/performance.md#import).
func (r callResult) output() string {
	if r.content == nil {
		return r.text
	}
	return resultText(r.content)
}

// mayContain reports whether output may hold one of words (ASCII, without
// backslashes or quotes), without decoding it: a JSON string's escapes
// other than \u make only control characters, quotes and slashes, so
// where the raw content holds no \u and none of words, neither does its text.
func (r callResult) mayContain(words ...string) bool {
	if r.content == nil {
		return slices.ContainsFunc(words, func(w string) bool { return strings.Contains(r.text, w) })
	}
	if bytes.Contains(r.content, []byte(`\u`)) {
		return true
	}
	return slices.ContainsFunc(words, func(w string) bool { return bytes.Contains(r.content, []byte(w)) })
}

// touch notes a time the source reported. The earliest is the start's
// (a one-file session's start is held back until it is closed, see
// Translator.release, so a later file of it can still move it earlier).
func (s *session) touch(at time.Time) {
	if at.IsZero() {
		return
	}
	if s.startAt.IsZero() || at.Before(s.startAt) {
		s.startAt = at
	}
	if at.After(s.lastAt) {
		s.lastAt = at
	}
}

// when is the time of a record: its own, else the session's last, else the file's.
func (s *session) when(at time.Time, fc *fileCtx) time.Time {
	switch {
	case !at.IsZero():
		return at
	case !s.lastAt.IsZero():
		return s.lastAt
	}
	return fc.mtime
}

// userText is a prompt: the session's first, before its start is
// published, becomes the start's prompt; later ones are stdout prose
// marked as the user's.
func (s *session) userText(ctx context.Context, at time.Time, text string) error {
	if text == "" {
		return nil
	}
	if !s.started && (s.pre == nil || s.pre.prompt == "") {
		if s.pre == nil {
			s.pre = &preStart{}
		}
		s.begun, s.pre.prompt = true, text
		return nil
	}
	return s.prose(ctx, at, "stdout", "\n> "+text+"\n")
}

// prose publishes stdout or stderr text, split to fit a chunk.
func (s *session) prose(ctx context.Context, at time.Time, stream, text string) error {
	s.sawProse = true
	for text != "" {
		n := min(len(text), streams.MaxChunkText)
		for n < len(text) && !utf8.RuneStart(text[n]) {
			n--
		}
		if err := s.chunk(ctx, at, &streams.Envelope{Stream: stream, Text: text[:n]}); err != nil {
			return err
		}
		text = text[n:]
	}
	return nil
}

// event publishes a completed action.
func (s *session) event(ctx context.Context, at time.Time, ev *streams.Event) error {
	if ev == nil {
		return nil
	}
	ev.Output = truncate(ev.Output, maxOutput)
	ev.Command = fitText(ev.Command, streams.MaxCommandLen)
	if len(ev.Arguments) > streams.MaxArgumentsLen {
		ev.Arguments = nil // cut JSON is no JSON: past its bound it is left out
	}
	if len(ev.Content) > maxInlineFile {
		size := int64(len(ev.Content))
		ev.ContentDigest, ev.Size, ev.Content = library.Digest([]byte(ev.Content)), &size, ""
	}
	probe := streams.Envelope{V: streams.Version, Type: streams.TypeSessionChunk, ID: "probe", At: at,
		SessionID: s.id, Seq: 1, Stream: "event", Event: ev}
	if err := probe.Validate(); err != nil {
		s.tr.skipped(s.files[len(s.files)-1], 0, "action not recorded: "+err.Error())
		return nil // an action the source described too little to record; no seq is spent on it
	}
	return s.chunk(ctx, at, &streams.Envelope{Stream: "event", Event: ev})
}

// chunk publishes one chunk, numbered in the translation; spine has those
// up to the ended sessions' and a started session's last (see resolve),
// and the rest are numbered in the session written to.
func (s *session) chunk(ctx context.Context, at time.Time, e *streams.Envelope) error {
	s.begun = true
	if err := s.resolve(ctx); err != nil {
		return err
	}
	s.seq++
	if s.seq <= s.rec.after || s.seq <= s.rec.resumeAfter {
		return nil
	}
	if err := s.open(ctx, at); err != nil {
		return err
	}
	seq := s.seq - s.rec.after
	e.V, e.Type, e.SessionID, e.Seq, e.At = streams.Version, streams.TypeSessionChunk, s.rec.id, seq, at.UTC()
	e.ID = envelopeID(s.app(), s.rec.id, "chunk", seq)
	return s.tr.publish(ctx, s, e)
}

func (s *session) startTime() time.Time {
	if s.startAt.IsZero() {
		return time.UnixMilli(s.fallback).UTC()
	}
	return s.startAt.UTC()
}

// call remembers a tool call until its result arrives.
func (s *session) call(ctx context.Context, id string, at time.Time, build func(callResult) []*streams.Event) error {
	s.begun = true
	if s.tr.seenLine(s, "call:"+id) {
		return nil // a snapshot of a call already seen
	}
	if s.calls != nil && len(s.calls.order) >= maxPendingCalls {
		if err := s.result(ctx, s.calls.order[0], time.Time{}, callResult{missing: true}); err != nil {
			return err
		}
	}
	if s.calls == nil {
		s.calls = &calls{byID: map[string]*pendingCall{}}
	}
	s.calls.byID[id] = &pendingCall{at: at, build: build}
	s.calls.order = append(s.calls.order, id)
	return nil
}

// result completes a pending call and publishes its event (r.missing: the
// call's, with no result). A result for a call never seen is ignored:
// there is no action to attach it to.
func (s *session) result(ctx context.Context, id string, at time.Time, r callResult) error {
	if s.calls == nil || s.calls.byID[id] == nil {
		return nil
	}
	p := s.calls.byID[id]
	delete(s.calls.byID, id)
	s.calls.order = slices.DeleteFunc(s.calls.order, func(x string) bool { return x == id })
	if len(s.calls.order) == 0 {
		s.calls = nil // most sessions wait on no call most of the time
	}
	if at.IsZero() {
		at = p.at
	}
	for _, ev := range p.build(r) {
		if r.missing {
			ev = unanswered(ev)
		}
		if err := s.event(ctx, at, ev); err != nil {
			return err
		}
	}
	return nil
}

// unanswered is the event of a call whose result never came: what was
// asked (the command, path, url, tool and arguments) and nothing of an
// outcome — no output, exit code, status or content stands in for the
// one never reported.
func unanswered(ev *streams.Event) *streams.Event {
	out := &streams.Event{Action: ev.Action, Command: ev.Command, Path: ev.Path, URL: ev.URL, Server: ev.Server,
		Tool: ev.Tool, CallID: ev.CallID, Arguments: ev.Arguments, NoResult: true}
	out.ContentUnknown = out.Action == "file_read" || out.Action == "file_write"
	return out
}

// waiting reports whether a call is waiting for its result.
func (s *session) waiting(id string) bool { return s.calls != nil && s.calls.byID[id] != nil }

// replace completes a pending call with events its result described
// better than the call did (a Codex FileChange's paths and contents for an
// apply_patch). A call never seen is ignored, as in result.
func (s *session) replace(ctx context.Context, id string, at time.Time, evs []*streams.Event) error {
	if s.calls == nil || s.calls.byID[id] == nil {
		return nil
	}
	s.calls.byID[id].build = func(callResult) []*streams.Event { return evs }
	return s.result(ctx, id, at, callResult{})
}

// addRaw keeps one of the app's usage reports verbatim, up to a bound.
func (s *session) addRaw(r json.RawMessage) {
	if s.raw == nil {
		s.raw = &rawReports{}
	}
	if len(s.raw.list) >= maxRawReports || s.raw.bytes+len(r) > maxRawBytes {
		s.raw.more++
		return
	}
	s.raw.bytes += len(r) + 1
	s.raw.list = append(s.raw.list, append(json.RawMessage(nil), r...))
}

// total is the session's normalised usage: the app's own total when it
// reported one (see byReport), else the sum over its responses.
func (s *session) total() streams.Usage {
	switch {
	case s.byReport():
		return *s.report
	case s.cumulative != nil:
		return *s.cumulative
	}
	return s.tokens
}

// byReport reports whether the session's tokens are the app's own report.
// A Claude session's report covers the processes whose logs were
// imported (every thread and side request of each); its transcript covers
// every process's responses. When the responses add up to more, some
// process's log is missing and they count instead (see claudeRuns); the
// cost, the logs' alone, then covers fewer runs (Ended.CostPartial). The
// choice is whole: with one run's log, another run's missing and a
// subagent's transcript missing, both sides miss something and the
// larger counts (docs/counting.md#6-one-session-in-several-formats).
func (s *session) byReport() bool {
	return s.report != nil && (s.claude == nil || allTokens(s.tokens) <= allTokens(*s.report))
}

// allTokens is every count but reasoning (a part of output): the tokens in all.
func allTokens(u streams.Usage) int64 {
	return u.InputTokens + u.OutputTokens + u.CacheReadTokens + u.CacheWriteTokens
}

func (s *session) reported() bool {
	return s.report != nil || s.cumulative != nil || s.responses > 0
}

// finish records the calls still waiting as calls with no result, and
// publishes the end.
func (s *session) finish(ctx context.Context) error {
	if !s.begun {
		return nil // nothing was ever recorded: no session
	}
	if err := s.resolve(ctx); err != nil {
		return err
	}
	if s.rec.id == s.id {
		if err := s.open(ctx, time.Time{}); err != nil {
			return err
		}
	}
	for s.calls != nil {
		if err := s.result(ctx, s.calls.order[0], time.Time{}, callResult{missing: true}); err != nil {
			return err
		}
	}
	_, err := s.end(ctx)
	return err
}

// endTime is the latest time the source reported, never before the start.
func (s *session) endTime() time.Time {
	if s.lastAt.IsZero() || s.lastAt.Before(s.startTime()) {
		return s.startTime()
	}
	return s.lastAt.UTC()
}

// rawJSON is usage.raw: {"format", "reports": [the app's reports verbatim]}.
func (s *session) rawJSON() json.RawMessage {
	v := map[string]any{"format": s.format, "reports": []json.RawMessage{}}
	if s.raw != nil {
		v["reports"] = s.raw.list
		if s.raw.more > 0 {
			v["reportsOmitted"] = s.raw.more
		}
	}
	b, _ := json.Marshal(v)
	return b
}

// fit holds an envelope to the field bounds (streams/limits.go) before it
// is published: free text is cut with a marker; a name or path past its
// bound (no real file has one) is left out, since a cut one would name
// something else. An importer must never build an envelope the door refuses.
func fit(e *streams.Envelope) {
	e.Prompt = fitText(e.Prompt, streams.MaxPromptLen)
	e.Error = fitText(e.Error, streams.MaxErrorLen)
	e.Workspace = within(e.Workspace, streams.MaxPathLen)
	e.AppSessionRef = within(e.AppSessionRef, streams.MaxNameLen)
	e.Model, e.Effort = within(e.Model, streams.MaxNameLen), within(e.Effort, streams.MaxNameLen)
}

// fitText cuts s, marker included, to at most limit bytes.
func fitText(s string, limit int) string {
	if len(s) <= limit {
		return s
	}
	return truncate(s, limit-len(TruncatedMarker))
}

// within is s, or "" when s is past limit.
func within(s string, limit int) string {
	if len(s) > limit {
		return ""
	}
	return s
}

// TruncatedMarker ends free text cut to fit its bound.
const TruncatedMarker = "\n[… truncated by spine import]"

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + TruncatedMarker
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
