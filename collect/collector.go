package collect

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spinehq/spine/apps"
	"github.com/spinehq/spine/importer"
	"github.com/spinehq/spine/streams"
)

// Options tune a Collector.
type Options struct {
	// ClaudeDir is Claude Code's directory (~/.claude); its
	// projects/**/*.jsonl are collected. "" collects no Claude Code.
	ClaudeDir string
	// CodexDir is Codex's directory (~/.codex); its
	// sessions/**/rollout-*.jsonl are collected. "" collects no Codex.
	CodexDir string
	// StatePath is the file that keeps each file's offset; "" means
	// DefaultStatePath.
	StatePath string
	// Sink receives the envelopes (spine's HTTP ingest in the CLI); it must
	// be set. Offsets are saved only after its Flush succeeded.
	Sink importer.Sink
	// Owner owns the sessions where the sink does not decide (HTTP ingest
	// makes the token's member the owner); "" means "dev"/"dev".
	Owner streams.Owner
	// Machine is every collected session's workerId, so one spine can tell
	// many machines apart; "" means the host name, its characters that a
	// worker id cannot hold (a dot, say) made '-'.
	Machine string
	// Poll is how often the directories are scanned besides what fsnotify
	// reports (default 2s): the fallback where notifications are missing
	// (network file systems, a watch limit reached).
	Poll time.Duration
	// NoNotify leaves fsnotify out: polling alone, as where notifications
	// are missing. false uses both.
	NoNotify bool
	// Logger hears what was skipped and what failed; nil discards.
	Logger *slog.Logger
}

// Collector tails the apps' files and sends what they write to spine (see
// the package doc). A Collector is one run: after Run or Once returns, a
// new one (New) goes on from the saved offsets.
type Collector struct {
	opts  Options
	st    *state
	gate  *gate
	tr    *apps.Translator
	tails map[string]*tail // open files by path
	// forgot is set when a file's offset was dropped since the last save.
	forgot     bool
	duplicates int // the sink's count
	refused    int // refusals logged
	log        *slog.Logger
}

// New checks the options and loads the state.
func New(opts Options) (*Collector, error) {
	if opts.Sink == nil {
		return nil, fmt.Errorf("%w: no sink", ErrBadOption)
	}
	if opts.ClaudeDir == "" && opts.CodexDir == "" {
		return nil, fmt.Errorf("%w: neither a Claude Code nor a Codex directory", ErrBadOption)
	}
	for _, dir := range []*string{&opts.ClaudeDir, &opts.CodexDir} {
		if *dir == "" {
			continue
		}
		abs, err := filepath.Abs(*dir) // the state names files by path: the same from any working directory
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrBadOption, err)
		}
		*dir = abs
	}
	if opts.StatePath == "" {
		p, err := DefaultStatePath()
		if err != nil {
			return nil, fmt.Errorf("%w: no state path: %v", ErrBadOption, err)
		}
		opts.StatePath = p
	}
	opts.Poll = cmp.Or(opts.Poll, 2*time.Second)
	opts.Owner.Org, opts.Owner.Member = cmp.Or(opts.Owner.Org, "dev"), cmp.Or(opts.Owner.Member, "dev")
	if !streams.ValidOwnerID(opts.Owner.Org) || !streams.ValidOwnerID(opts.Owner.Member) {
		return nil, fmt.Errorf("%w: owner %s/%s is not a valid org and member", ErrBadOption, opts.Owner.Org, opts.Owner.Member)
	}
	if opts.Machine == "" {
		host, err := os.Hostname()
		if err != nil {
			return nil, fmt.Errorf("%w: no machine name: %v", ErrBadOption, err)
		}
		opts.Machine = machineName(host)
	}
	if !streams.ValidID(opts.Machine) {
		return nil, fmt.Errorf("%w: machine %q is not a valid worker id", ErrBadOption, opts.Machine)
	}
	st, err := loadState(opts.StatePath)
	if err != nil {
		return nil, err
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	c := &Collector{opts: opts, st: st, gate: &gate{Sink: opts.Sink, machine: opts.Machine}, tails: map[string]*tail{}, log: log}
	c.tr = apps.NewTranslator(apps.Options{Owner: opts.Owner, Sink: c.gate, Skipped: c.skipped})
	return c, nil
}

func (c *Collector) skipped(file string, line int, reason string) {
	c.log.Info("line skipped", "file", file, "line", line, "reason", reason)
}

// source is a file the collector reads, with its format.
type source struct {
	path   string
	format apps.Format
}

// list finds every file to collect, in the order `spine import` reads
// them (lexical, so a session's transcript comes before its subagents').
func (c *Collector) list() ([]source, error) {
	var out []source
	walk := func(root string, format apps.Format, want func(name string) bool) error {
		err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				if path == root && errors.Is(err, fs.ErrNotExist) {
					return fs.SkipAll // not created yet: the app never ran here
				}
				return nil // a directory that vanished or cannot be read: the next pass sees
			}
			if !d.IsDir() && want(d.Name()) {
				out = append(out, source{path: path, format: format})
			}
			return nil
		})
		return err
	}
	if c.opts.ClaudeDir != "" {
		err := walk(filepath.Join(c.opts.ClaudeDir, "projects"), apps.FormatClaudeTranscript, func(n string) bool {
			return strings.HasSuffix(n, ".jsonl")
		})
		if err != nil {
			return nil, err
		}
	}
	if c.opts.CodexDir != "" {
		err := walk(filepath.Join(c.opts.CodexDir, "sessions"), apps.FormatCodexRollout, func(n string) bool {
			return strings.HasPrefix(n, "rollout-") && strings.HasSuffix(n, ".jsonl")
		})
		if err != nil {
			return nil, err
		}
	}
	slices.SortFunc(out, func(a, b source) int { return strings.Compare(a.path, b.path) })
	return out, nil
}

// roots are the directories watched for changes.
func (c *Collector) roots() []string {
	var r []string
	if c.opts.ClaudeDir != "" {
		r = append(r, filepath.Join(c.opts.ClaudeDir, "projects"))
	}
	if c.opts.CodexDir != "" {
		r = append(r, filepath.Join(c.opts.CodexDir, "sessions"))
	}
	return r
}

// Once reads every complete line present and returns: the sessions stay
// open on spine (a later Run or Once goes on with them).
func (c *Collector) Once(ctx context.Context) error {
	if err := c.replay(ctx); err != nil {
		return err
	}
	return c.pass(ctx)
}

// Run collects until ctx is done: a pass on every change fsnotify reports
// and every Options.Poll. It returns nil when ctx ends, else the error
// that stopped it (a sink failing): a new Collector then reads again what
// spine did not accept, from the saved offsets.
func (c *Collector) Run(ctx context.Context) error {
	w := newWatcher(c.log, !c.opts.NoNotify)
	defer w.close()
	if err := c.replay(ctx); err != nil {
		return err
	}
	tick := time.NewTicker(c.opts.Poll)
	defer tick.Stop()
	for {
		w.watch(c.roots())
		if err := c.pass(ctx); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		case <-w.events:
		}
	}
}

// replay reads each file the state knows up to its offset with the gate
// muted: spine has those lines' envelopes already.
func (c *Collector) replay(ctx context.Context) error {
	srcs, err := c.list()
	if err != nil {
		return err
	}
	c.gate.muted = true
	defer func() { c.gate.muted = false }()
	for _, src := range srcs {
		fs := c.st.Files[src.path]
		if fs == nil {
			continue
		}
		t, err := c.open(src)
		if err != nil || t.id != fs.ID || t.size < fs.Offset {
			c.forget(src.path) // gone, rewritten or cut: read again from the start
			continue
		}
		if err := t.read(ctx, fs.Offset); err != nil {
			return err
		}
	}
	return nil
}

// pass reads what every file has gained, sends it, and saves the offsets.
func (c *Collector) pass(ctx context.Context) error {
	srcs, err := c.list()
	if err != nil {
		return err
	}
	seen := map[string]bool{}
	for _, src := range srcs {
		seen[src.path] = true
		if err := c.file(ctx, src); err != nil {
			return err
		}
	}
	for path := range c.tails {
		if !seen[path] {
			c.forget(path) // deleted: spine keeps what it has
		}
	}
	for path := range c.st.Files {
		if !seen[path] {
			c.forget(path)
		}
	}
	stats, err := c.opts.Sink.Flush(ctx)
	c.duplicates = stats.Duplicates
	if err != nil {
		return err
	}
	for _, r := range stats.Refused[c.refused:] {
		c.log.Warn("envelope refused", "id", r.ID, "code", r.Code, "reason", r.Reason)
	}
	c.refused = len(stats.Refused)
	return c.commit()
}

// Stats are what a Collector has sent so far.
type Stats struct {
	Sent int // envelopes passed to the sink
	// Duplicates are envelopes spine already had: a file rewritten or
	// read again from the start; never a line sent before a restart.
	Duplicates int
}

// Stats says what the Collector has sent so far.
func (c *Collector) Stats() Stats { return Stats{Sent: c.gate.sent, Duplicates: c.duplicates} }

// commit saves every open file's offset, now that spine accepted what was
// read up to it.
func (c *Collector) commit() error {
	changed := c.forgot
	c.forgot = false
	for path, t := range c.tails {
		fs := c.st.Files[path]
		if fs == nil || fs.Offset != t.offset || fs.ID != t.id {
			c.st.Files[path] = &fileState{Offset: t.offset, Lines: t.lines, ID: t.id}
			changed = true
		}
	}
	if !changed {
		return nil
	}
	return c.st.save(c.opts.StatePath)
}

// file reads what one file gained since the last pass.
func (c *Collector) file(ctx context.Context, src source) error {
	t := c.tails[src.path]
	if t != nil {
		if err := t.restat(); err != nil {
			c.forget(src.path)
			return nil
		}
		if t.rewritten() {
			c.log.Info("file rewritten: reading it again", "file", src.path)
			c.forget(src.path)
			t = nil
		}
	}
	if t == nil {
		var err error
		if t, err = c.open(src); err != nil {
			return nil // vanished between the listing and now
		}
	}
	return t.read(ctx, t.size)
}

// open starts a file's tail and its translation stream.
func (c *Collector) open(src source) (*tail, error) {
	fi, err := os.Stat(src.path)
	if err != nil {
		return nil, err
	}
	t := &tail{path: src.path, id: fileID(fi), size: fi.Size(), log: c.log,
		stream: c.tr.Stream(apps.Source{Path: src.path, ModTime: fi.ModTime().UTC().Truncate(time.Millisecond), Format: src.format})}
	c.tails[src.path] = t
	return t, nil
}

// forget drops a file's tail and offset.
func (c *Collector) forget(path string) {
	delete(c.tails, path)
	if _, ok := c.st.Files[path]; ok {
		delete(c.st.Files, path)
		c.forgot = true
	}
}

// machineName is a host name as a worker id.
func machineName(host string) string {
	b := []byte(host)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			b[i] = '-'
		}
	}
	return string(b[:min(len(b), streams.MaxIDLen)])
}
