package importer

import (
	"bufio"
	"cmp"
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
	// Billing is stamped on every end: "" (unknown), "subscription" or
	// "metered". Files never say, so only the person importing can.
	Billing string
	// Owner owns the imported sessions. HTTP ingest replaces it with the
	// token's org and member; "" means "dev"/"dev", like `spine token mint`.
	Owner streams.Owner
	// Sink receives the envelopes; nil means a dry run (nothing published).
	Sink Sink
	// Progress, when set, is called after each file and every few MB.
	Progress func(Progress)
}

// Progress is how far an import has come.
type Progress struct {
	Files, TotalFiles int
	Bytes, TotalBytes int64
	Sessions          int
}

// Importer imports files into spine. Use Import; an Importer is one run.
type Importer struct {
	opts      Options
	sink      Sink
	sum       *Summary
	sessions  map[string]*session
	order     []*session
	responses map[[16]byte]*response
	lines     map[[16]byte]struct{} // transcript lines seen, by session and uuid
	progress  Progress
}

// response is one counted model response and the usage it was counted with.
type response struct {
	s      *session
	tokens Tokens
	day    *dayUsage // where the session counted it
}

// Import reads every file under paths (directories recursively, in
// lexical order), publishes one session per app session it finds, and
// says what it did. A malformed line is skipped and reported; only a
// failing sink or an unreadable path stops the import.
func Import(ctx context.Context, paths []string, opts Options) (*Summary, error) {
	if err := opts.check(); err != nil {
		return nil, err
	}
	files, total, err := listFiles(paths)
	if err != nil {
		return nil, err
	}
	imp := &Importer{opts: opts, sink: opts.Sink, sum: &Summary{DryRun: opts.Sink == nil, Skipped: []Skip{},
		PerSession: []Imported{}, PerDay: []Day{}}, sessions: map[string]*session{}, responses: map[[16]byte]*response{},
		lines: map[[16]byte]struct{}{}}
	if imp.sink == nil {
		imp.sink = DiscardSink{}
	}
	imp.progress.TotalFiles, imp.progress.TotalBytes = len(files), total
	for _, f := range files {
		if err := imp.file(ctx, f); err != nil {
			return imp.sum, err
		}
	}
	for _, s := range imp.order {
		if err := s.finish(ctx); err != nil {
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

// session returns the session of an app session id, creating it on first sight.
func (imp *Importer) session(fc *fileCtx, appSessionID string) *session {
	app := fc.format.App()
	id := SessionID(app, appSessionID)
	s := imp.sessions[id]
	if s == nil {
		s = &session{imp: imp, id: id, appID: appSessionID, app: app, format: fc.format,
			kind: "open", fallback: fc.mtime}
		imp.sessions[id] = s
		imp.order = append(imp.order, s)
		imp.progress.Sessions++
	}
	if !slices.Contains(s.files, fc.path) {
		s.files = append(s.files, fc.path)
	}
	return s
}

// fileSessionID names a session for sources that carry no id: the file's
// base name without extension (the rollout's uuid, or the transcript's).
func fileSessionID(path string) string {
	base := filepath.Base(path)
	return strings.TrimSuffix(strings.TrimSuffix(base, ".jsonl"), ".json")
}

// countResponse counts one Claude response snapshot under its key, keeping
// the final (last seen) usage. A key another session counted first is a
// resumed session's copy: not counted again.
func (imp *Importer) countResponse(s *session, at time.Time, key [16]byte, t Tokens) {
	r := imp.responses[key]
	switch {
	case r == nil:
		r = &response{s: s, tokens: t, day: s.day(at)}
		imp.responses[key] = r
		s.tokens.add(t)
		s.responses++
		r.day.responses++
		r.day.tokens.add(t)
	case r.s == s:
		s.tokens.sub(r.tokens)
		s.tokens.add(t)
		r.day.responses--
		r.day.tokens.sub(r.tokens)
		r.tokens, r.day = t, s.day(at) // the day of the snapshot whose usage counts
		r.day.responses++
		r.day.tokens.add(t)
	default:
		imp.sum.RepeatedResponses++
	}
}

// seenLine reports whether a session's line (by uuid) was imported already,
// and remembers it: a resumed session's file repeats earlier lines.
func (imp *Importer) seenLine(s *session, uuid string) bool {
	if uuid == "" {
		return false
	}
	k := responseKey(s.app, s.id, "line:"+uuid)
	if _, ok := imp.lines[k]; ok {
		return true
	}
	imp.lines[k] = struct{}{}
	return false
}

func (imp *Importer) publish(ctx context.Context, e *streams.Envelope) error {
	if err := e.Validate(); err != nil {
		return fmt.Errorf("import built an invalid envelope %s: %w", e.ID, err)
	}
	imp.sum.Envelopes++
	return imp.sink.Publish(ctx, e)
}

func (imp *Importer) summarise() {
	var counted []*session
	defer func() { imp.sum.PerDay = perDay(counted) }()
	for _, s := range imp.order {
		if !s.begun {
			continue
		}
		t := s.total()
		row := Imported{SessionID: s.id, AppSessionID: s.appID, App: s.app, Format: s.format, Files: s.files,
			Status: cmpOr(s.status, "done"), Model: s.model, Responses: s.responses, Tokens: t,
			TotalCost: s.cost, Chunks: s.seq, AlreadyRecorded: s.skip}
		imp.sum.PerSession = append(imp.sum.PerSession, row)
		if s.skip {
			imp.sum.AlreadyRecorded++
			continue
		}
		imp.sum.Sessions++
		counted = append(counted, s)
		imp.sum.Responses += s.responses
		imp.sum.Tokens.add(t)
	}
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
