package apps

import (
	"cmp"
	"container/list"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spinehq/spine/streams"
)

// Options tune a Translator.
type Options struct {
	// Owner owns the sessions: every start carries it. It must be a valid
	// org and member (the importer fills and checks it).
	Owner streams.Owner
	// Billing is stamped on every end: "subscription" or "metered"; ""
	// keeps what the app's output says, where it says (Claude stream-json's
	// apiKeySource, see claudeBilling; a Codex rollout's ChatGPT sign-in),
	// else unknown.
	Billing string
	// Sink receives the envelopes; it must be set.
	Sink Sink
	// Skipped, when set, hears of an action the source described too
	// little to record, by the last file of its session (line 0).
	Skipped func(file string, line int, reason string)
	// Ended, when set, hears of each session as it is closed, when it
	// had something to record.
	Ended func(*Ended)
	// NewOutput says the records are output the app writes after the
	// translation began, none of it read before (spine run reads the
	// process it starts): an app session spine already holds is not read
	// again from its start but continued, the translation numbering its
	// chunks after spine's (see continuation.go).
	NewOutput bool
	// Live publishes every envelope as its record is translated, for an
	// app's output read while it runs (spine run, spine collect): a
	// stream-json or exec session's envelopes are not held back to its end
	// (see hold), so its transcript is readable before the app exits. The
	// start carries the time known when it is published. And each time a
	// record changes a started session's usage, a session.usage carries
	// the usage so far (see session.running).
	Live bool
	// UsageByPass holds a live translation's running usage back from each
	// record: it is published by PublishUsage, at most one session.usage
	// per session each time, for a caller that reads in passes (spine
	// collect: a pass of a long transcript would send one per response).
	UsageByPass bool
	// LeaveRun leaves alone the app sessions another producer records
	// from the app's own output: one whose spine session, or one of its
	// continuations, is kind run (spine run), is not published at all, in
	// any format (its chunks are numbered by that output, not by these
	// records). Asked when the session is first resolved and again just
	// before each start the translation would publish (a continuation
	// included), for the base session and the one to start. spine collect
	// sets it; its Sink answers kind run also for a session spine run has
	// marked on this machine before spine has its start.
	LeaveRun bool
	// Seen, when set, hears of each app session the translation meets, by
	// its spine id (SessionID), before anything of it is published: spine
	// run marks it as its own for a collector on the same machine.
	Seen func(sessionID string)
	Bounds
}

// Bounds are what a Translator holds at most; each zero value means its
// default.
type Bounds struct {
	// MaxOpenOneFile bounds the sessions of stream-json and exec output
	// kept open at once (default 1024). Such a session lives in one file,
	// or in a few consecutive ones (a run whose events were saved one per
	// file, a resumed run's second log); when more are open, EndIdle ends
	// the least recently used one and drops it, so a directory of
	// thousands of CI logs, or one log of thousands of concatenated runs,
	// is read in bounded memory. A record of a session ended that way is
	// skipped and reported.
	MaxOpenOneFile int
	// MaxHeldPerSession and MaxHeld bound the envelopes one-file sessions
	// hold back (see hold): per session (default 1 MiB) and in all
	// (default 32 MiB).
	MaxHeldPerSession, MaxHeld int
}

// Translator turns the records of the apps' output into envelopes, for
// every session its sources hold: one per import. A session can span
// sources (a resumed session's second transcript, a subagent's, a
// stream-json log beside its transcript), so the sessions, the responses
// counted and the lines seen are the Translator's, not a source's.
//
// What it holds grows with sessions and responses, never with bytes: each
// open session's small state (no text once its start is published), an
// 8-byte key per response with the usage it was counted with, an 8-byte
// key per transcript line and tool call, and one key per session ended
// early (see Bounds.MaxOpenOneFile).
type Translator struct {
	opts      Options
	sessions  map[string]*session // open sessions by spine id
	order     []*session          // every session by ordinal; nil once closed
	oneFile   *list.List          // open sessions of one-file formats, least recently used first
	ended     map[uint64]struct{} // sessions closed before the end, by Key(id)
	responses map[uint64]int32    // every response counted: the ordinal of the session that counted it
	recent    map[uint64]response // the usage of the responses counted last (see recentResponses)
	older     map[uint64]response // the generation before recent
	lines     map[uint64]struct{} // lines and tool calls seen, by session
	strs      map[string]string   // models and efforts, one copy each
	heldBytes int                 // of every open session's held envelopes
	last      *session            // the session the record being translated named
	stats     Stats
}

// Stats are what a Translator has counted so far.
type Stats struct {
	Sessions  int // sessions seen
	Envelopes int // envelopes built (published, or held to be)
	// RepeatedResponses were seen again in another session (a resumed
	// session's copy) and not counted twice.
	RepeatedResponses int
}

// NewTranslator returns a Translator with no session yet.
func NewTranslator(opts Options) *Translator {
	opts.MaxOpenOneFile = cmp.Or(opts.MaxOpenOneFile, 1024)
	opts.MaxHeldPerSession = cmp.Or(opts.MaxHeldPerSession, 1<<20)
	opts.MaxHeld = cmp.Or(opts.MaxHeld, 32<<20)
	return &Translator{opts: opts, sessions: map[string]*session{}, oneFile: list.New(), ended: map[uint64]struct{}{},
		responses: map[uint64]int32{}, recent: map[uint64]response{}, lines: map[uint64]struct{}{},
		strs: map[string]string{}}
}

// Stats says what the Translator has counted so far.
func (tr *Translator) Stats() Stats {
	st := tr.stats
	st.Sessions = len(tr.order)
	return st
}

// Source is one source of records: a file, or an app's output as it runs.
type Source struct {
	Path string
	// ModTime stands in for the time of a session whose records carry none.
	ModTime time.Time
	Format  Format
}

// fileCtx is one source being read.
type fileCtx struct {
	path   string
	mtime  time.Time
	format Format
}

// parser turns one format's records into session calls.
type parser interface {
	// record handles one value; a non-empty skip says why it was not imported.
	record(ctx context.Context, rec Record) (skip string, err error)
	// done is called at the end of the file.
	done(ctx context.Context) error
	// current is the session the source's last record went to, nil when
	// none (or it was ended).
	current() *session
}

// Stream is one source's translation: its records, in order, one at a time.
type Stream struct {
	p    parser
	tr   *Translator
	live bool     // Options.Live: running usage is published as it changes
	last *session // the session the last record went to; nil when none
}

// Stream starts translating one source.
func (tr *Translator) Stream(src Source) *Stream {
	fc := &fileCtx{path: src.Path, mtime: src.ModTime, format: src.Format}
	st := &Stream{tr: tr, live: tr.opts.Live}
	switch fc.format {
	case FormatClaudeStream:
		st.p = &claudeStream{tr: tr, fc: fc}
	case FormatClaudeTranscript:
		st.p = &claudeTranscript{tr: tr, fc: fc}
	case FormatCodexExec:
		st.p = &codexExec{tr: tr, fc: fc}
	default:
		st.p = &codexRollout{tr: tr, fc: fc}
	}
	return st
}

// Record translates one record; a non-empty skip says why it was not. An
// error is the sink's: it stops the translation.
func (st *Stream) Record(ctx context.Context, rec Record) (skip string, err error) {
	if err := st.leaveClaimed(ctx); err != nil {
		return "", err
	}
	st.tr.last = nil
	skip, err = st.p.record(ctx, rec)
	s := st.tr.last
	if s == nil {
		// A record that named no session (most of a Codex rollout's or
		// exec log's) went to the source's current one.
		s = st.p.current()
	}
	st.last = s
	if err == nil && st.live {
		switch {
		case s == nil || s.closed:
		case st.tr.opts.UsageByPass:
			s.usageDue = true
		default:
			err = s.running(ctx)
		}
	}
	return skip, err
}

// leaveClaimed ends, before a record is translated, the source's current
// session when another producer has claimed it since it was resolved
// (Options.LeaveRun, a Claimer sink): spine run resuming a session this
// translation holds open records the resumed process itself, so the
// session ends with what it had, and nothing more of it is published.
func (st *Stream) leaveClaimed(ctx context.Context) error {
	c, ok := st.tr.opts.Sink.(Claimer)
	if !ok || !st.tr.opts.LeaveRun {
		return nil
	}
	s := st.last // the session of the source's last record
	if s == nil || s.left || s.closed || !s.started || !c.Claimed(s.id) {
		return nil
	}
	err := s.pause(ctx)
	s.left = true
	return err
}

// Done ends the source (its sessions stay open: a later source may
// continue them).
func (st *Stream) Done(ctx context.Context) error { return st.p.done(ctx) }

// Exit is how the app's process that wrote the source ended, for live
// capture: its session's end carries code as its exit code and, when
// status is not "", that status and errText in place of what the output
// said (a run cancelled, or one that died before its result line); a
// "failed" leaves a failure the output reported as it said it, its error
// being the more precise. Call it after Done and before the session is
// ended (Translator.Finish); a source that named no session has none to
// mark.
func (st *Stream) Exit(code int, status, errText string) {
	s := st.p.current()
	if s == nil {
		return
	}
	s.exitCode = &code
	if status != "" && (status != "failed" || s.status != "failed") {
		s.status, s.err = status, errText
	}
}

// AppSessionID is the app's own id of the source's current session (a
// Codex thread id), "" when the source named none.
func (st *Stream) AppSessionID() string {
	if s := st.p.current(); s != nil {
		return s.appID
	}
	return ""
}

// Billing gives the source's current session a billing signal of the
// app's own that its source does not carry ("subscription" or
// "metered"; "" changes nothing): spine run reads a Codex exec run's from
// the thread's rollout (CodexRolloutBilling). Options.Billing still
// overrides it. Call it, as Exit, before the session is ended.
func (st *Stream) Billing(signal string) {
	if s := st.p.current(); s != nil && signal != "" {
		s.billing = signal
	}
}

// response is the usage a recent response was counted with and the day
// it went to, for its other snapshots.
type response struct {
	tokens streams.Usage
	day    int32 // index in the counting session's days
}

// recentResponses bounds a generation of Translator.recent. A response's
// other snapshot can supersede the one counted while the response is among
// the last 32 768 to 65 536 counted or updated; Claude Code writes a
// response's snapshots on consecutive lines, so only a snapshot left in a
// file read tens of thousands of responses later would be too late, and
// then the usage counted stays. (Of split copies of one session, only the
// response a shorter copy was cut in the middle of has a partial snapshot:
// it is too late only when that copy is read first and the longer one that
// many responses after.) Keeping every response's usage instead would cost
// 64 more bytes per response for the whole translation.
const recentResponses = 1 << 15

// Finish ends every session still open, in the order first seen.
func (tr *Translator) Finish(ctx context.Context) error {
	for _, s := range tr.order {
		if s == nil {
			continue
		}
		if err := tr.close(ctx, s); err != nil {
			return err
		}
	}
	return nil
}

// session returns the session of an app session id, creating it on first
// sight; nil when that session was closed earlier in the import (see
// Bounds.MaxOpenOneFile), whose records can no longer be recorded.
func (tr *Translator) session(fc *fileCtx, appSessionID string) *session {
	app := fc.format.App()
	id := SessionID(app, appSessionID)
	s := tr.sessions[id]
	if s == nil {
		if _, ok := tr.ended[Key(id)]; ok {
			return nil
		}
		s = &session{tr: tr, n: int32(len(tr.order)), id: id, appID: appSessionID, format: fc.format,
			fallback: fc.mtime.UnixMilli()}
		tr.sessions[id] = s
		tr.order = append(tr.order, s)
		if tr.opts.Seen != nil {
			tr.opts.Seen(id)
		}
		if s.format.OneFile() {
			s.lru = tr.oneFile.PushBack(s)
		}
	} else if s.lru != nil {
		tr.oneFile.MoveToBack(s.lru)
	}
	tr.last = s
	if len(s.files) == 0 || s.files[len(s.files)-1] != fc.path && !slices.Contains(s.files, fc.path) {
		s.files = append(s.files, fc.path)
	}
	return s
}

// OneFile reports whether the format's sessions are ended when idle (see
// Bounds.MaxOpenOneFile). Transcripts and rollouts are not: a later file may
// continue any of their sessions, so they stay open to the end.
func (f Format) OneFile() bool { return f == FormatClaudeStream || f == FormatCodexExec }

// endedSkip is why a record of a session closed early is not imported.
func (tr *Translator) endedSkip(appSessionID string) string {
	return fmt.Sprintf("session %s was already ended: a stream-json or exec session is ended once %d newer ones "+
		"have been read (import its files together, or on their own)", appSessionID, tr.opts.MaxOpenOneFile)
}

// EndIdle ends the least recently used one-file sessions beyond
// Bounds.MaxOpenOneFile.
func (tr *Translator) EndIdle(ctx context.Context) error {
	for tr.oneFile.Len() > tr.opts.MaxOpenOneFile {
		if err := tr.close(ctx, tr.oneFile.Front().Value.(*session)); err != nil {
			return err
		}
	}
	return nil
}

// close ends a session, says what it knows of it (Options.Ended) and drops it.
func (tr *Translator) close(ctx context.Context, s *session) error {
	err := errors.Join(s.finish(ctx), tr.release(ctx, s))
	if s.begun && tr.opts.Ended != nil {
		tr.opts.Ended(s.ended())
	}
	s.closed = true
	delete(tr.sessions, s.id)
	tr.order[s.n] = nil
	if s.lru != nil {
		tr.oneFile.Remove(s.lru)
		s.lru = nil
		tr.ended[Key(s.id)] = struct{}{}
	}
	return err
}

// intern returns one shared copy of a short string seen in many sessions
// (a model, an effort), up to a bound.
func (tr *Translator) intern(v string) string {
	if c, ok := tr.strs[v]; ok {
		return c
	}
	if len(tr.strs) < 4096 {
		tr.strs[v] = v
	}
	return v
}

// fileSession is the session a file's records belong to when they do not
// name one: the last one named, or the file's own.
type fileSession struct {
	s    *session
	gone string // the app id of a session ended earlier in the import: its records are skipped
}

// set makes s (the session of appID, nil when it was ended) the current one.
func (f *fileSession) set(s *session, appID string) *session {
	f.s, f.gone = s, ""
	if s == nil {
		f.gone = appID
	}
	return s
}

// known reports whether the file has named a session yet.
func (f *fileSession) known() bool { return f.s != nil || f.gone != "" }

// get is the current session; nil when it was ended (see Bounds.MaxOpenOneFile).
func (f *fileSession) get() *session {
	if f.s != nil && f.s.closed {
		f.s, f.gone = nil, f.s.appID
	}
	return f.s
}

// fileSessionID names a session for sources that carry no id: the file's
// base name without extension (the rollout's uuid, or the transcript's).
func fileSessionID(path string) string {
	base := filepath.Base(path)
	return strings.TrimSuffix(strings.TrimSuffix(base, ".jsonl"), ".json")
}

// countResponse counts one Claude response snapshot under its key, keeping
// its final usage: the snapshot that supersedes every other (see
// supersedes), whatever order the snapshots come in and however often one
// is read again (split copies of a session repeat earlier lines). A key
// another session counted first is a resumed session's copy: not counted
// again.
func (tr *Translator) countResponse(s *session, at time.Time, k uint64, t streams.Usage) {
	sess, ok := tr.responses[k]
	switch {
	case !ok:
		tr.responses[k] = s.n
		s.tokens.Add(t)
		s.responses++
	case sess != s.n:
		tr.stats.RepeatedResponses++
		return
	default: // another snapshot of a response this session counted
		r, ok := tr.recent[k]
		if !ok {
			if r, ok = tr.older[k]; !ok {
				return // too long after the last one (see recentResponses)
			}
		}
		if !supersedes(t, dayOf(at), r.tokens, s.days[r.day].date) {
			return
		}
		s.tokens.Sub(r.tokens)
		s.tokens.Add(t)
		d := &s.days[r.day]
		d.responses--
		d.tokens.Sub(r.tokens)
	}
	r := response{tokens: t, day: s.day(at)} // the day of the snapshot whose usage counts
	d := &s.days[r.day]
	d.responses++
	d.tokens.Add(t)
	tr.recent[k] = r
	if len(tr.recent) >= recentResponses {
		tr.older, tr.recent = tr.recent, make(map[uint64]response, recentResponses)
	}
}

// supersedes reports whether a response's snapshot t, on day, is later
// than the one counted (c, on cday). Claude Code writes a line per content
// block as the response streams, each with the usage known so far: the
// counts only grow, output_tokens most of all (the first lines carry the
// message_start's few tokens, the last the final count). So the snapshot
// with the most output is the final one; of equal output, the one with
// more of the other counts; of equal usage, the one on the earlier day
// (the first line that had it, as ccusage keeps). This is an order on the
// snapshots themselves, not on when they are read, so the final usage
// wins whatever the order and overlap of the files: the last line read
// could be any copy's. (Lines carry no sequence number to order them by;
// their timestamps tie at millisecond resolution.)
func supersedes(t streams.Usage, day int32, c streams.Usage, cday int32) bool {
	if t.SameCounts(c) {
		return day < cday
	}
	return cmp.Or(cmp.Compare(t.OutputTokens, c.OutputTokens),
		cmp.Compare(t.InputTokens+t.CacheReadTokens+t.CacheWriteTokens+t.ReasoningTokens,
			c.InputTokens+c.CacheReadTokens+c.CacheWriteTokens+c.ReasoningTokens),
		cmp.Compare(t.InputTokens, c.InputTokens), cmp.Compare(t.CacheReadTokens, c.CacheReadTokens),
		cmp.Compare(t.CacheWriteTokens, c.CacheWriteTokens), cmp.Compare(t.ReasoningTokens, c.ReasoningTokens)) > 0
}

// seenLine reports whether a session's line (by uuid) was imported already,
// and remembers it: a resumed session's file repeats earlier lines.
func (tr *Translator) seenLine(s *session, uuid string) bool {
	if uuid == "" {
		return false
	}
	k := Key("line", s.app(), s.id, uuid)
	if _, ok := tr.lines[k]; ok {
		return true
	}
	tr.lines[k] = struct{}{}
	return false
}

func (tr *Translator) publish(ctx context.Context, s *session, e *streams.Envelope) error {
	if s.left {
		return nil // another producer's (Options.LeaveRun)
	}
	fit(e)
	if err := e.Validate(); err != nil {
		return fmt.Errorf("import built an invalid envelope %s: %w", e.ID, err)
	}
	tr.stats.Envelopes++
	s.published = true
	if s.format.OneFile() && !s.streaming && !tr.opts.Live {
		return tr.hold(ctx, s, e)
	}
	return tr.opts.Sink.Publish(ctx, e)
}

// hold keeps a one-file session's envelope back until the session is
// closed, so its start, chunks and end reach the log together and the
// recorder writes the session once, in one batch, instead of inserting it
// in one and reading it back to finish it in another (such a session is
// closed only once Bounds.MaxOpenOneFile newer ones are open). A session
// holding more than Bounds.MaxHeldPerSession bytes, or the least recently
// used ones while all hold more than Bounds.MaxHeld, are released and
// publish as they go.
func (tr *Translator) hold(ctx context.Context, s *session, e *streams.Envelope) error {
	n := envelopeSize(e)
	s.held, s.heldBytes, tr.heldBytes = append(s.held, e), s.heldBytes+n, tr.heldBytes+n
	if s.heldBytes > tr.opts.MaxHeldPerSession {
		return tr.release(ctx, s)
	}
	for tr.heldBytes > tr.opts.MaxHeld {
		oldest := tr.oneFile.Front()
		for oldest != nil && len(oldest.Value.(*session).held) == 0 {
			oldest = oldest.Next()
		}
		if oldest == nil {
			break
		}
		if err := tr.release(ctx, oldest.Value.(*session)); err != nil {
			return err
		}
	}
	return nil
}

// release publishes a session's held envelopes; from then on it publishes
// the rest as they come (a closed session has none).
func (tr *Translator) release(ctx context.Context, s *session) error {
	held := s.held
	if len(held) > 0 && held[0].Type == streams.TypeSessionStart && held[0].SessionID == s.id {
		held[0].At = s.startTime() // the earliest time read since it was held
	}
	s.held, s.streaming = nil, true
	tr.heldBytes -= s.heldBytes
	s.heldBytes = 0
	for _, e := range held {
		if err := tr.opts.Sink.Publish(ctx, e); err != nil {
			return err
		}
	}
	return nil
}

// envelopeSize is about what an envelope takes in memory.
func envelopeSize(e *streams.Envelope) int {
	n := 256 + len(e.Text) + len(e.Prompt) + len(e.Workspace) + len(e.Error)
	if ev := e.Event; ev != nil {
		n += 256 + len(ev.Command) + len(ev.Output) + len(ev.Path) + len(ev.Content) + len(ev.URL)
	}
	if e.Usage != nil {
		n += 256 + len(e.Usage.Raw)
	}
	for _, a := range e.Artifacts {
		n += 128 + len(a.Name) + len(a.Content)
	}
	return n
}

// skipped reports an action not recorded, when Options.Skipped listens.
func (tr *Translator) skipped(file string, line int, reason string) {
	if tr.opts.Skipped != nil {
		tr.opts.Skipped(file, line, reason)
	}
}
