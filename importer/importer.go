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

	"github.com/spinehq/spine/apps"
	"github.com/spinehq/spine/streams"
)

// Options tune one import.
type Options struct {
	// App limits the import to one app's formats ("" imports both;
	// "claude-code" or "codex"). A file of the other app is skipped.
	App string
	// Format forces every file's format; "" detects it per file.
	Format apps.Format
	// Billing is stamped on every end: "subscription" or "metered"; ""
	// keeps what the app's output says, where it says (Claude stream-json's
	// apiKeySource; a Codex rollout's ChatGPT sign-in), else unknown.
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

// Importer imports files into spine. Use Import; an Importer is one run:
// the files, in order, through one apps.Translator, which holds what the
// run remembers of sessions and responses (see apps.Translator).
type Importer struct {
	opts     Options
	sink     Sink
	tr       *apps.Translator
	sum      *Summary
	days     map[dayKey]*daySum // closed sessions' responses and tokens per day and app
	progress Progress
}

// bounds are the translator's; zero values are its defaults. A variable
// for tests.
var bounds apps.Bounds

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
		PerSession: []Imported{}, PerDay: []Day{}}, days: map[dayKey]*daySum{}}
	if imp.sink == nil {
		imp.sink = DiscardSink{}
	} else {
		p := startPipe(ctx, imp.sink)
		defer p.stop()
		imp.sink = p
	}
	imp.tr = apps.NewTranslator(apps.Options{Owner: opts.Owner, Billing: opts.Billing, Sink: imp.sink,
		Skipped: imp.sum.skip, Ended: imp.tally, Bounds: bounds})
	imp.progress.TotalFiles, imp.progress.TotalBytes = len(files), total
	for _, f := range sessionFilesFirst(files, opts.Format) {
		if err := imp.file(ctx, f); err != nil {
			return imp.counted(), err
		}
	}
	if err := imp.tr.Finish(ctx); err != nil {
		return imp.counted(), err
	}
	stats, err := imp.sink.Flush(ctx)
	imp.sum.Duplicates, imp.sum.Refused = stats.Duplicates, stats.Refused
	imp.summarise()
	imp.report()
	return imp.counted(), err
}

// counted is the summary with the translator's counts.
func (imp *Importer) counted() *Summary {
	st := imp.tr.Stats()
	imp.sum.Envelopes, imp.sum.RepeatedResponses = st.Envelopes, st.RepeatedResponses
	return imp.sum
}

func (o *Options) check() error {
	if o.App != "" && !slices.Contains(streams.Apps, o.App) {
		return fmt.Errorf("%w: app %q is not one of %v", ErrBadOption, o.App, streams.Apps)
	}
	if _, err := apps.ParseFormat(string(o.Format)); err != nil {
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
func sessionFilesFirst(files []string, forced apps.Format) []string {
	if forced != "" {
		return files
	}
	var first, later []string
	for _, f := range files {
		if fileFormat(f).OneFile() {
			later = append(later, f)
		} else {
			first = append(first, f)
		}
	}
	return append(first, later...)
}

// fileFormat is the format detect tells from a file's first values, ""
// when it tells none or the file cannot be read (file reports that).
func fileFormat(path string) apps.Format {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	format, _ := apps.Detect(bufio.NewReaderSize(f, 64<<10))
	return format
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
	src := apps.Source{Path: path, ModTime: st.ModTime().UTC().Truncate(time.Millisecond), Format: imp.opts.Format}
	if src.Format == "" {
		if src.Format, err = apps.Detect(br); err != nil {
			imp.sum.skip(path, 0, "format not recognised (pass --format)")
			imp.step()
			return nil
		}
	}
	if imp.opts.App != "" && src.Format.App() != imp.opts.App {
		imp.sum.skip(path, 0, fmt.Sprintf("%s file, not %s (--app)", src.Format, imp.opts.App))
		imp.step()
		return nil
	}
	err = imp.records(ctx, path, apps.NewRecordReader(br), imp.tr.Stream(src))
	io.Copy(io.Discard, cr) //nolint:errcheck // count the rest of a file a reader gave up on
	imp.progress.Files++
	imp.step()
	return err
}

func (imp *Importer) records(ctx context.Context, path string, rr apps.RecordReader, st *apps.Stream) error {
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		rec, err := rr.Next()
		var le *apps.LineError
		switch {
		case errors.Is(err, io.EOF):
			return st.Done(ctx)
		case errors.As(err, &le):
			imp.sum.Lines++
			imp.sum.skip(path, le.N, le.Reason)
			if le.Fatal {
				return st.Done(ctx)
			}
			continue
		case err != nil:
			imp.sum.skip(path, 0, "read: "+err.Error())
			return st.Done(ctx)
		}
		imp.sum.Lines++
		if rec.Repaired {
			imp.sum.RepairedLines++
		}
		skip, err := st.Record(ctx, rec)
		if err != nil {
			return err
		}
		if skip != "" {
			imp.sum.skip(path, rec.N, skip)
		}
		if err := imp.tr.EndIdle(ctx); err != nil {
			return err
		}
	}
}

// tally adds a closed session (apps.Options.Ended) to the summary: its row (up to
// MaxSessionsListed unless AllSessions), and, unless spine had it already,
// its totals and days.
func (imp *Importer) tally(s *apps.Ended) {
	t := s.Tokens
	if imp.opts.AllSessions || len(imp.sum.PerSession) < MaxSessionsListed {
		imp.sum.PerSession = append(imp.sum.PerSession, Imported{n: int32(s.Ordinal), SessionID: s.SessionID,
			AppSessionID: s.AppSessionID, App: s.App, Format: s.Format, Files: s.Files, Status: s.Status, Model: s.Model,
			Responses: s.Responses, Tokens: report(t), TotalCost: s.Cost, CostPartial: s.CostPartial, Chunks: s.Chunks,
			AlreadyRecorded: s.AlreadyRecorded, Untimed: s.Untimed})
	} else {
		imp.sum.OmittedSessions++
	}
	if s.AlreadyRecorded {
		imp.sum.AlreadyRecorded++
		return
	}
	imp.sum.Sessions++
	imp.sum.Responses += s.Responses
	imp.sum.tokens.Add(t)
	imp.sum.Tokens = report(imp.sum.tokens)
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
		imp.progress.Sessions = imp.tr.Stats().Sessions
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
