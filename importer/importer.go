package importer

import (
	"bufio"
	"cmp"
	"container/list"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spinehq/spine/streams"
)

// Options tune one import.
type Options struct {
	// App limits the import to one app's formats ("" imports both;
	// "claude-code" or "codex"). A file of the other app is skipped.
	App string
	// Format forces every file's format; "" detects it per file.
	Format Format
	// Billing is stamped on every end: "subscription" or "metered"; ""
	// keeps what the app's output says, where it says (Claude stream-json's
	// apiKeySource, see claudeBilling; a Codex rollout's ChatGPT sign-in),
	// else unknown.
	Billing string
	// Owner owns the imported sessions. HTTP ingest replaces it with the
	// token's org and member; "" means "dev"/"dev", like `spine token mint`.
	Owner streams.Owner
	// Sink receives the envelopes; nil means a dry run (nothing published).
	Sink Sink
	// Progress, when set, is called after each file and every few MB.
	Progress func(Progress)
	// AllSessions lists every session in Summary.PerSession; by default
	// at most MaxSessionsListed are listed (the totals count them all).
	AllSessions bool
}

// Progress is how far an import has come.
type Progress struct {
	Files, TotalFiles int
	Bytes, TotalBytes int64
	Sessions          int
}

// Importer imports files into spine. Use Import; an Importer is one run.
//
// What it holds grows with sessions and responses, never with bytes: each
// open session's small state (no text once its start is published), an
// 8-byte key per response with the usage it was counted with, an 8-byte
// key per transcript line and tool call, and one key per session ended
// early (see maxOpenOneFile).
type Importer struct {
	opts      Options
	sink      Sink
	sum       *Summary
	sessions  map[string]*session // open sessions by spine id
	order     []*session          // every session by ordinal; nil once closed
	oneFile   *list.List          // open sessions of one-file formats, least recently used first
	ended     map[uint64]struct{} // sessions closed before the end of the import, by key(id)
	responses map[uint64]int32    // every response counted: the ordinal of the session that counted it
	recent    map[uint64]response // the usage of the responses counted last (see recentResponses)
	older     map[uint64]response // the generation before recent
	lines     map[uint64]struct{} // lines and tool calls seen, by session
	days      map[dayKey]*daySum  // closed sessions' responses and tokens per day and app
	strs      map[string]string   // models and efforts, one copy each
	progress  Progress
	heldBytes int // of every open session's held envelopes
}

// Bounds on the envelopes one-file sessions hold back (see hold);
// variables for tests.
var (
	maxHeldPerSession = 1 << 20
	maxHeld           = 32 << 20
)

// response is the usage a recent response was counted with and the day
// it went to, for its other snapshots.
type response struct {
	tokens Tokens
	day    int32 // index in the counting session's days
}

// recentResponses bounds a generation of Importer.recent. A response's
// other snapshot can supersede the one counted while the response is among
// the last 32 768 to 65 536 counted or updated; Claude Code writes a
// response's snapshots on consecutive lines, so only a snapshot left in a
// file read tens of thousands of responses later would be too late, and
// then the usage counted stays. (Of split copies of one session, only the
// response a shorter copy was cut in the middle of has a partial snapshot:
// it is too late only when that copy is read first and the longer one that
// many responses after.) Keeping every response's usage instead would cost
// 40 more bytes per response for the whole import.
const recentResponses = 1 << 15

// Import reads every file under paths (directories recursively, in
// lexical order; transcripts and rollouts before stream-json and exec
// output, see sessionFilesFirst), publishes one session per app session
// it finds, and says what it did. A malformed line is skipped and
// reported; only a failing sink or an unreadable path stops the import.
func Import(ctx context.Context, paths []string, opts Options) (*Summary, error) {
	if err := opts.check(); err != nil {
		return nil, err
	}
	files, total, err := listFiles(paths)
	if err != nil {
		return nil, err
	}
	imp := &Importer{opts: opts, sink: opts.Sink, sum: &Summary{DryRun: opts.Sink == nil, Skipped: []Skip{},
		PerSession: []Imported{}, PerDay: []Day{}}, sessions: map[string]*session{}, oneFile: list.New(),
		ended: map[uint64]struct{}{}, responses: map[uint64]int32{}, recent: map[uint64]response{}, lines: map[uint64]struct{}{},
		days: map[dayKey]*daySum{}, strs: map[string]string{}}
	if imp.sink == nil {
		imp.sink = DiscardSink{}
	}
	imp.progress.TotalFiles, imp.progress.TotalBytes = len(files), total
	for _, f := range sessionFilesFirst(files, opts.Format) {
		if err := imp.file(ctx, f); err != nil {
			return imp.sum, err
		}
	}
	for _, s := range imp.order {
		if s == nil {
			continue
		}
		if err := imp.close(ctx, s); err != nil {
			return imp.sum, err
		}
	}
	stats, err := imp.sink.Flush(ctx)
	imp.sum.Duplicates, imp.sum.Refused = stats.Duplicates, stats.Refused
	imp.summarise()
	imp.report()
	return imp.sum, err
}

func (o *Options) check() error {
	if o.App != "" && !slices.Contains(streams.Apps, o.App) {
		return fmt.Errorf("%w: app %q is not one of %v", ErrBadOption, o.App, streams.Apps)
	}
	if _, err := ParseFormat(string(o.Format)); err != nil {
		return err
	}
	if o.App != "" && o.Format != "" && o.Format.App() != o.App {
		return fmt.Errorf("%w: format %s is %s's, not %s's", ErrBadOption, o.Format, o.Format.App(), o.App)
	}
	if !slices.Contains(streams.BillingSignals, o.Billing) {
		return fmt.Errorf("%w: billing %q is not subscription or metered", ErrBadOption, o.Billing)
	}
	o.Owner.Org, o.Owner.Member = cmp.Or(o.Owner.Org, "dev"), cmp.Or(o.Owner.Member, "dev")
	if !streams.ValidOwnerID(o.Owner.Org) || !streams.ValidOwnerID(o.Owner.Member) {
		return fmt.Errorf("%w: owner %s/%s is not a valid org and member", ErrBadOption, o.Owner.Org, o.Owner.Member)
	}
	return nil
}

// listFiles expands directories into their .jsonl and .json files, sorted,
// each once, and sums their sizes for the progress bar.
func listFiles(paths []string) ([]string, int64, error) {
	var files []string
	var total int64
	seen := map[string]bool{}
	add := func(p string, size int64) {
		abs, err := filepath.Abs(p)
		if err == nil && seen[abs] {
			return
		}
		seen[abs] = true
		files = append(files, p)
		total += size
	}
	for _, p := range paths {
		st, err := os.Stat(p)
		if err != nil {
			return nil, 0, err
		}
		if !st.IsDir() {
			add(p, st.Size())
			continue
		}
		var found []string
		err = filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if !d.IsDir() && (strings.HasSuffix(path, ".jsonl") || strings.HasSuffix(path, ".json")) {
				found = append(found, path)
			}
			return nil
		})
		if err != nil {
			return nil, 0, err
		}
		slices.Sort(found)
		for _, f := range found {
			if st, err := os.Stat(f); err == nil {
				add(f, st.Size())
			}
		}
	}
	return files, total, nil
}

// sessionFilesFirst orders the files so that transcripts and rollouts
// come before stream-json and exec output (each group in its own order;
// forced is Options.Format, which leaves the order alone). One session can
// be in both kinds of file at once (`spine import ~/.claude logs/`): its
// transcript holds every line, with its time, and the headless log repeats
// some of them (by uuid) and adds the app's own report. Reading the
// transcript first makes the session's prompt, prose order and times the
// transcript's whatever order the paths were given in; the log then adds
// only what the transcript lacks.
func sessionFilesFirst(files []string, forced Format) []string {
	if forced != "" {
		return files
	}
	var first, later []string
	for _, f := range files {
		if fileFormat(f).oneFile() {
			later = append(later, f)
		} else {
			first = append(first, f)
		}
	}
	return append(first, later...)
}

// fileFormat is the format detect tells from a file's first values, ""
// when it tells none or the file cannot be read (file reports that).
func fileFormat(path string) Format {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	format, _ := detect(bufio.NewReaderSize(f, 64<<10))
	return format
}

// fileCtx is one file being read.
type fileCtx struct {
	path   string
	mtime  time.Time
	format Format
}

// parser turns one format's records into session calls.
type parser interface {
	// record handles one value; a non-empty skip says why it was not imported.
	record(ctx context.Context, rec record) (skip string, err error)
	// done is called at the end of the file.
	done(ctx context.Context) error
}

func (imp *Importer) file(ctx context.Context, path string) error {
	f, err := os.Open(path)
	if err != nil {
		imp.sum.skip(path, 0, err.Error())
		return nil
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		imp.sum.skip(path, 0, err.Error())
		return nil
	}
	imp.sum.Files++
	cr := &countingReader{r: f, imp: imp}
	br := bufio.NewReaderSize(cr, 1<<20)
	fc := &fileCtx{path: path, mtime: st.ModTime().UTC().Truncate(time.Millisecond), format: imp.opts.Format}
	if fc.format == "" {
		if fc.format, err = detect(br); err != nil {
			imp.sum.skip(path, 0, "format not recognised (pass --format)")
			imp.step()
			return nil
		}
	}
	if imp.opts.App != "" && fc.format.App() != imp.opts.App {
		imp.sum.skip(path, 0, fmt.Sprintf("%s file, not %s (--app)", fc.format, imp.opts.App))
		imp.step()
		return nil
	}
	err = imp.records(ctx, fc, newRecordReader(br), imp.parser(fc))
	io.Copy(io.Discard, cr) //nolint:errcheck // count the rest of a file a reader gave up on
	imp.progress.Files++
	imp.step()
	return err
}

func (imp *Importer) records(ctx context.Context, fc *fileCtx, rr recordReader, p parser) error {
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		rec, err := rr.next()
		var le *lineError
		switch {
		case errors.Is(err, io.EOF):
			return p.done(ctx)
		case errors.As(err, &le):
			imp.sum.Lines++
			imp.sum.skip(fc.path, le.n, le.reason)
			if le.fatal {
				return p.done(ctx)
			}
			continue
		case err != nil:
			imp.sum.skip(fc.path, 0, "read: "+err.Error())
			return p.done(ctx)
		}
		imp.sum.Lines++
		if rec.repaired {
			imp.sum.RepairedLines++
		}
		skip, err := p.record(ctx, rec)
		if err != nil {
			return err
		}
		if skip != "" {
			imp.sum.skip(fc.path, rec.n, skip)
		}
		if err := imp.closeIdle(ctx); err != nil {
			return err
		}
	}
}

func (imp *Importer) parser(fc *fileCtx) parser {
	switch fc.format {
	case FormatClaudeStream:
		return &claudeStream{imp: imp, fc: fc}
	case FormatClaudeTranscript:
		return &claudeTranscript{imp: imp, fc: fc}
	case FormatCodexExec:
		return &codexExec{imp: imp, fc: fc}
	default:
		return &codexRollout{imp: imp, fc: fc}
	}
}

// session returns the session of an app session id, creating it on first
// sight; nil when that session was closed earlier in the import (see
// maxOpenOneFile), whose records can no longer be recorded.
func (imp *Importer) session(fc *fileCtx, appSessionID string) *session {
	app := fc.format.App()
	id := SessionID(app, appSessionID)
	s := imp.sessions[id]
	if s == nil {
		if _, ok := imp.ended[key(id)]; ok {
			return nil
		}
		s = &session{imp: imp, n: int32(len(imp.order)), id: id, appID: appSessionID, format: fc.format,
			fallback: fc.mtime.UnixMilli()}
		imp.sessions[id] = s
		imp.order = append(imp.order, s)
		imp.progress.Sessions++
		if s.format.oneFile() {
			s.lru = imp.oneFile.PushBack(s)
		}
	} else if s.lru != nil {
		imp.oneFile.MoveToBack(s.lru)
	}
	if len(s.files) == 0 || s.files[len(s.files)-1] != fc.path && !slices.Contains(s.files, fc.path) {
		s.files = append(s.files, fc.path)
	}
	return s
}

// maxOpenOneFile bounds the sessions of stream-json and exec output kept
// open at once. Such a session lives in one file, or in a few consecutive
// ones (a run whose events were saved one per file, a resumed run's second
// log); when more are open, the least recently used one is ended and
// dropped, so a directory of thousands of CI logs, or one log of
// thousands of concatenated runs, is imported in bounded memory. A record
// of a session ended that way is skipped and reported. A variable for tests.
var maxOpenOneFile = 1024

// oneFile reports whether the format's sessions are ended when idle (see
// maxOpenOneFile). Transcripts and rollouts are not: a later file may
// continue any of their sessions, so they stay open to the end.
func (f Format) oneFile() bool { return f == FormatClaudeStream || f == FormatCodexExec }

// endedSkip is why a record of a session closed early is not imported.
func endedSkip(appSessionID string) string {
	return fmt.Sprintf("session %s was already ended: a stream-json or exec session is ended once %d newer ones "+
		"have been read (import its files together, or on their own)", appSessionID, maxOpenOneFile)
}

// closeIdle ends the least recently used one-file sessions beyond maxOpenOneFile.
func (imp *Importer) closeIdle(ctx context.Context) error {
	for imp.oneFile.Len() > maxOpenOneFile {
		if err := imp.close(ctx, imp.oneFile.Front().Value.(*session)); err != nil {
			return err
		}
	}
	return nil
}

// close ends a session, adds it to the summary and drops it.
func (imp *Importer) close(ctx context.Context, s *session) error {
	err := errors.Join(s.finish(ctx), imp.release(ctx, s))
	imp.tally(s)
	s.closed = true
	delete(imp.sessions, s.id)
	imp.order[s.n] = nil
	if s.lru != nil {
		imp.oneFile.Remove(s.lru)
		s.lru = nil
		imp.ended[key(s.id)] = struct{}{}
	}
	return err
}

// intern returns one shared copy of a short string seen in many sessions
// (a model, an effort), up to a bound.
func (imp *Importer) intern(v string) string {
	if c, ok := imp.strs[v]; ok {
		return c
	}
	if len(imp.strs) < 4096 {
		imp.strs[v] = v
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

// get is the current session; nil when it was ended (see maxOpenOneFile).
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
func (imp *Importer) countResponse(s *session, at time.Time, k uint64, t Tokens) {
	sess, ok := imp.responses[k]
	switch {
	case !ok:
		imp.responses[k] = s.n
		s.tokens.add(t)
		s.responses++
	case sess != s.n:
		imp.sum.RepeatedResponses++
		return
	default: // another snapshot of a response this session counted
		r, ok := imp.recent[k]
		if !ok {
			if r, ok = imp.older[k]; !ok {
				return // too long after the last one (see recentResponses)
			}
		}
		if !supersedes(t, dayOf(at), r.tokens, s.days[r.day].date) {
			return
		}
		s.tokens.sub(r.tokens)
		s.tokens.add(t)
		d := &s.days[r.day]
		d.responses--
		d.tokens.sub(r.tokens)
	}
	r := response{tokens: t, day: s.day(at)} // the day of the snapshot whose usage counts
	d := &s.days[r.day]
	d.responses++
	d.tokens.add(t)
	imp.recent[k] = r
	if len(imp.recent) >= recentResponses {
		imp.older, imp.recent = imp.recent, make(map[uint64]response, recentResponses)
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
func supersedes(t Tokens, day int32, c Tokens, cday int32) bool {
	if t == c {
		return day < cday
	}
	return cmp.Or(cmp.Compare(t.Output, c.Output),
		cmp.Compare(t.Input+t.CacheRead+t.CacheWrite+t.Reasoning, c.Input+c.CacheRead+c.CacheWrite+c.Reasoning),
		cmp.Compare(t.Input, c.Input), cmp.Compare(t.CacheRead, c.CacheRead), cmp.Compare(t.CacheWrite, c.CacheWrite),
		cmp.Compare(t.Reasoning, c.Reasoning)) > 0
}

// seenLine reports whether a session's line (by uuid) was imported already,
// and remembers it: a resumed session's file repeats earlier lines.
func (imp *Importer) seenLine(s *session, uuid string) bool {
	if uuid == "" {
		return false
	}
	k := key("line", s.app(), s.id, uuid)
	if _, ok := imp.lines[k]; ok {
		return true
	}
	imp.lines[k] = struct{}{}
	return false
}

func (imp *Importer) publish(ctx context.Context, s *session, e *streams.Envelope) error {
	fit(e)
	if err := e.Validate(); err != nil {
		return fmt.Errorf("import built an invalid envelope %s: %w", e.ID, err)
	}
	imp.sum.Envelopes++
	if s.format.oneFile() && !s.streaming {
		return imp.hold(ctx, s, e)
	}
	return imp.sink.Publish(ctx, e)
}

// hold keeps a one-file session's envelope back until the session is
// closed, so its start, chunks and end reach the log together and the
// recorder writes the session once, in one batch, instead of inserting it
// in one and reading it back to finish it in another (such a session is
// closed only once maxOpenOneFile newer ones are open). A session holding
// more than maxHeldPerSession bytes, or the least recently used ones while
// all hold more than maxHeld, are released and publish as they go.
func (imp *Importer) hold(ctx context.Context, s *session, e *streams.Envelope) error {
	n := envelopeSize(e)
	s.held, s.heldBytes, imp.heldBytes = append(s.held, e), s.heldBytes+n, imp.heldBytes+n
	if s.heldBytes > maxHeldPerSession {
		return imp.release(ctx, s)
	}
	for imp.heldBytes > maxHeld {
		oldest := imp.oneFile.Front()
		for oldest != nil && len(oldest.Value.(*session).held) == 0 {
			oldest = oldest.Next()
		}
		if oldest == nil {
			break
		}
		if err := imp.release(ctx, oldest.Value.(*session)); err != nil {
			return err
		}
	}
	return nil
}

// release publishes a session's held envelopes; from then on it publishes
// the rest as they come (a closed session has none).
func (imp *Importer) release(ctx context.Context, s *session) error {
	held := s.held
	if len(held) > 0 && held[0].Type == streams.TypeSessionStart {
		held[0].At = s.startTime() // the earliest time read since it was held
	}
	s.held, s.streaming = nil, true
	imp.heldBytes -= s.heldBytes
	s.heldBytes = 0
	for _, e := range held {
		if err := imp.sink.Publish(ctx, e); err != nil {
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

// tally adds a closed session to the summary: its row (up to
// MaxSessionsListed unless AllSessions), and, unless spine had it already,
// its totals and days.
func (imp *Importer) tally(s *session) {
	if !s.begun {
		return
	}
	t := s.total()
	if imp.opts.AllSessions || len(imp.sum.PerSession) < MaxSessionsListed {
		imp.sum.PerSession = append(imp.sum.PerSession, Imported{n: s.n, SessionID: s.id, AppSessionID: s.appID,
			App: s.app(), Format: s.format, Files: s.files, Status: cmpOr(s.status, "done"), Model: s.model,
			Responses: s.responses, Tokens: t.report(), TotalCost: s.cost, Chunks: s.seq, AlreadyRecorded: s.skip,
			Untimed: s.startAt.IsZero()})
	} else {
		imp.sum.OmittedSessions++
	}
	if s.skip {
		imp.sum.AlreadyRecorded++
		return
	}
	imp.sum.Sessions++
	imp.sum.Responses += s.responses
	imp.sum.tokens.add(t)
	imp.sum.Tokens = imp.sum.tokens.report()
	imp.addDays(s)
}

// summarise puts the listed sessions in the order they were first seen and
// the days in date order.
func (imp *Importer) summarise() {
	slices.SortFunc(imp.sum.PerSession, func(a, b Imported) int { return cmp.Compare(a.n, b.n) })
	imp.sum.PerDay = imp.perDay()
}

func (imp *Importer) step() {
	if imp.opts.Progress != nil {
		imp.opts.Progress(imp.progress)
	}
}

func (imp *Importer) report() { imp.step() }

// countingReader counts bytes read, for the summary and the progress bar.
type countingReader struct {
	r    io.Reader
	imp  *Importer
	tick int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.imp.sum.Bytes += int64(n)
	c.imp.progress.Bytes += int64(n)
	if c.tick += int64(n); c.tick >= 4<<20 {
		c.tick = 0
		c.imp.step()
	}
	return n, err
}
