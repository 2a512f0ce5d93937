package importer

import (
	"context"
	"encoding/json"
	"slices"
	"time"
	"unicode/utf8"

	"github.com/spinehq/spine/library"
	"github.com/spinehq/spine/streams"
)

// Bounds on what one session holds in memory and puts in one envelope.
const (
	maxPendingCalls = 4096      // tool calls waiting for their result
	maxRawReports   = 256       // verbatim usage reports kept for usage.raw
	maxOutput       = 256 << 10 // command or tool output kept on an event
	maxInlineFile   = 2 << 20   // larger file content travels as a digest
)

// session is one app session being imported: its place in the sequence,
// its pending tool calls and the usage it reported. It is small: content
// passes straight through to the sink.
type session struct {
	imp       *Importer
	id, appID string
	app       string
	format    Format
	kind      string
	workspace string
	files     []string

	startAt, lastAt time.Time
	fallback        time.Time // the first file's modification time, for sources without times
	begun           bool      // there is something to record
	started         bool      // the start is published, or spine had it already
	skip            bool      // spine recorded and ended it before: publish nothing
	resumeAfter     int64     // chunks at or below this seq were recorded before
	seq             int64
	prompt          string

	tokens     Tokens  // sum of the final usage of each response
	report     *Tokens // the app's own session total, when it gave one
	cumulative *Tokens // Codex rollouts: the last total_token_usage
	raw        []json.RawMessage
	rawMore    int
	responses  int
	days       map[string]*dayUsage // UTC date → this session's share

	model, effort string
	cost          *float64
	status, err   string
	exitCode      *int

	sawProse     bool
	pending      map[string]*pendingCall
	pendingOrder []string
}

// pendingCall is a tool call waiting for its result; build turns the
// result into the event the cockpit would have published.
type pendingCall struct {
	at    time.Time
	build func(callResult) []*streams.Event
}

// callResult is what came back from a tool call.
type callResult struct {
	text       string
	isError    bool
	structured json.RawMessage // Claude Code's toolUseResult, when present
}

// touch notes a time the source reported.
func (s *session) touch(at time.Time) {
	if at.IsZero() {
		return
	}
	if !s.started && (s.startAt.IsZero() || at.Before(s.startAt)) {
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

// userText is a prompt: the session's first becomes the start's prompt,
// later ones are stdout prose marked as the user's.
func (s *session) userText(ctx context.Context, at time.Time, text string) error {
	if text == "" {
		return nil
	}
	if !s.begun && s.prompt == "" {
		s.begun, s.prompt = true, text
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
	if len(ev.Content) > maxInlineFile {
		size := int64(len(ev.Content))
		ev.ContentDigest, ev.Size, ev.Content = library.Digest([]byte(ev.Content)), &size, ""
	}
	probe := streams.Envelope{V: streams.Version, Type: streams.TypeSessionChunk, ID: "probe", At: at,
		SessionID: s.id, Seq: 1, Stream: "event", Event: ev}
	if err := probe.Validate(); err != nil {
		s.imp.sum.skip(s.files[len(s.files)-1], 0, "action not recorded: "+err.Error())
		return nil // an action the source described too little to record; no seq is spent on it
	}
	return s.chunk(ctx, at, &streams.Envelope{Stream: "event", Event: ev})
}

func (s *session) chunk(ctx context.Context, at time.Time, e *streams.Envelope) error {
	s.begun = true
	if err := s.start(ctx); err != nil {
		return err
	}
	s.seq++
	if s.skip || s.seq <= s.resumeAfter {
		return nil
	}
	e.V, e.Type, e.SessionID, e.Seq, e.At = streams.Version, streams.TypeSessionChunk, s.id, s.seq, at.UTC()
	e.ID = envelopeID(s.app, s.id, "chunk", s.seq)
	return s.imp.publish(ctx, e)
}

// start publishes the session's start once, unless spine already has it.
func (s *session) start(ctx context.Context) error {
	if s.started {
		return nil
	}
	s.started = true
	rec, err := s.imp.sink.Recorded(ctx, s.id)
	if err != nil {
		return err
	}
	s.skip, s.resumeAfter = rec.Ended, rec.LastSeq
	if rec.Started {
		return nil
	}
	owner := s.imp.opts.Owner
	return s.imp.publish(ctx, &streams.Envelope{V: streams.Version, Type: streams.TypeSessionStart,
		ID: envelopeID(s.app, s.id, "start", 0), At: s.startTime(), SessionID: s.id, App: s.app, Kind: s.kind,
		AppSessionRef: s.appID, Workspace: s.workspace, Owner: &owner, Prompt: s.prompt})
}

func (s *session) startTime() time.Time {
	if s.startAt.IsZero() {
		return s.fallback.UTC()
	}
	return s.startAt.UTC()
}

// call remembers a tool call until its result arrives.
func (s *session) call(ctx context.Context, id string, at time.Time, build func(callResult) []*streams.Event) error {
	s.begun = true
	if s.imp.seenLine(s, "call:"+id) {
		return nil // a snapshot of a call already seen
	}
	if len(s.pendingOrder) >= maxPendingCalls {
		oldest := s.pendingOrder[0]
		if err := s.result(ctx, oldest, time.Time{}, callResult{}); err != nil {
			return err
		}
	}
	if s.pending == nil {
		s.pending = map[string]*pendingCall{}
	}
	s.pending[id] = &pendingCall{at: at, build: build}
	s.pendingOrder = append(s.pendingOrder, id)
	return nil
}

// result completes a pending call and publishes its event. A result for
// a call never seen is ignored: there is no action to attach it to.
func (s *session) result(ctx context.Context, id string, at time.Time, r callResult) error {
	p := s.pending[id]
	if p == nil {
		return nil
	}
	delete(s.pending, id)
	s.pendingOrder = slices.DeleteFunc(s.pendingOrder, func(x string) bool { return x == id })
	if at.IsZero() {
		at = p.at
	}
	for _, ev := range p.build(r) {
		if err := s.event(ctx, at, ev); err != nil {
			return err
		}
	}
	return nil
}

// addRaw keeps one of the app's usage reports verbatim, up to a bound.
func (s *session) addRaw(r json.RawMessage) {
	if len(s.raw) >= maxRawReports {
		s.rawMore++
		return
	}
	s.raw = append(s.raw, append(json.RawMessage(nil), r...))
}

// total is the session's normalised usage: the app's own total when it
// reported one, else the sum over its responses.
func (s *session) total() Tokens {
	switch {
	case s.report != nil:
		return *s.report
	case s.cumulative != nil:
		return *s.cumulative
	}
	return s.tokens
}

func (s *session) reported() bool {
	return s.report != nil || s.cumulative != nil || s.responses > 0
}

// finish flushes pending calls and publishes the end.
func (s *session) finish(ctx context.Context) error {
	if !s.begun {
		return nil // nothing was ever recorded: no session
	}
	if err := s.start(ctx); err != nil {
		return err
	}
	for len(s.pendingOrder) > 0 {
		if err := s.result(ctx, s.pendingOrder[0], time.Time{}, callResult{}); err != nil {
			return err
		}
	}
	if s.skip {
		return nil
	}
	e := &streams.Envelope{V: streams.Version, Type: streams.TypeSessionEnd, ID: envelopeID(s.app, s.id, "end", 0),
		At: s.endTime(), SessionID: s.id, Status: cmpOr(s.status, "done"), ExitCode: s.exitCode, Error: s.err,
		Model: s.model, Effort: s.effort, TotalCost: s.cost, Billing: s.imp.opts.Billing}
	if s.reported() {
		e.Usage = s.total().usage()
		e.Usage.Raw = s.rawJSON()
	}
	return s.imp.publish(ctx, e)
}

func (s *session) endTime() time.Time {
	if s.lastAt.IsZero() {
		return s.startTime()
	}
	return s.lastAt.UTC()
}

// rawJSON is usage.raw: {"format", "reports": [the app's reports verbatim]}.
func (s *session) rawJSON() json.RawMessage {
	v := map[string]any{"format": s.format, "reports": s.raw}
	if s.raw == nil {
		v["reports"] = []json.RawMessage{}
	}
	if s.rawMore > 0 {
		v["reportsOmitted"] = s.rawMore
	}
	b, _ := json.Marshal(v)
	return b
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "\n[… truncated by spine import]"
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
