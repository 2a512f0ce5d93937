package collect

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"maps"
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
	// Idle ends a session whose files have had no new line for this long
	// (judged by their modification times), with its usage so far, so its
	// router-call row exists; what the app writes to it later is recorded
	// as a continuation, a new spine session with the same appSessionRef.
	// 0 means DefaultIdle; below 0, never.
	Idle time.Duration
	// ClaimsDir is where spine run claims the app sessions it records
	// (see Claim); the collector leaves those alone, as it does every
	// session spine holds as kind run. A new file being written waits for
	// its claim only while a spine run there is marked running (MarkRun).
	// "" means none are claimed and no file waits (spine says kind run all
	// the same, once it has spine run's start).
	ClaimsDir string
	// Logger hears what was skipped and what failed; nil discards.
	Logger *slog.Logger
}

// DefaultIdle is Options.Idle's default.
const DefaultIdle = 10 * time.Minute

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
	// unreadable are the files that could not be read, logged once.
	unreadable map[string]bool
	log        *slog.Logger
	lock       *os.File // held on the state file from New to the end of the run
	// firstSeen is when each new file (no offset yet) was first listed;
	// wake, when not zero, is when the first one held is due (see fresh).
	firstSeen map[string]time.Time
	wake      time.Time
	now       func() time.Time // time.Now; tests set a clock of their own
	// lastPass is the wall-clock time of the last pass (see recheck).
	lastPass time.Time
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
	opts.Idle = cmp.Or(opts.Idle, DefaultIdle)
	opts.Owner.Org, opts.Owner.Member = cmp.Or(opts.Owner.Org, "dev"), cmp.Or(opts.Owner.Member, "dev")
	if !streams.ValidOwnerID(opts.Owner.Org) || !streams.ValidOwnerID(opts.Owner.Member) {
		return nil, fmt.Errorf("%w: owner %s/%s is not a valid org and member", ErrBadOption, opts.Owner.Org, opts.Owner.Member)
	}
	if opts.Machine == "" {
		host, err := os.Hostname()
		if err != nil {
			return nil, fmt.Errorf("%w: no machine name: %v", ErrBadOption, err)
		}
		opts.Machine = streams.MachineID(host)
	}
	if !streams.ValidID(opts.Machine) {
		return nil, fmt.Errorf("%w: machine %q is not a valid worker id", ErrBadOption, opts.Machine)
	}
	lock, err := lockState(opts.StatePath)
	if err != nil {
		return nil, err
	}
	st, err := loadState(opts.StatePath)
	if err != nil {
		lock.Close()
		return nil, err
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	c := &Collector{opts: opts, st: st, gate: &gate{Sink: opts.Sink, machine: opts.Machine, claims: opts.ClaimsDir}, tails: map[string]*tail{}, unreadable: map[string]bool{}, log: log, lock: lock,
		firstSeen: map[string]time.Time{}, now: time.Now}
	// Live: each session's usage so far is sent as it changes (session.usage).
	// LeaveRun: spine run's sessions are recorded from its own output.
	// UsageByPass: one session.usage per session and pass at most.
	c.tr = apps.NewTranslator(apps.Options{Owner: opts.Owner, Sink: c.gate, Skipped: c.skipped, Live: true, LeaveRun: true,
		UsageByPass: true})
	return c, nil
}

// Close lets go of the state file, for another collector; Run and Once
// do it as they return. A Collector is not used after it.
func (c *Collector) Close() {
	if c.lock != nil {
		c.lock.Close()
		c.lock = nil
	}
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

// Once reads every complete line present, ends the sessions whose files
// have been quiet for Options.Idle, and returns: the others stay open on
// spine (a later Run or Once goes on with them, or ends them).
func (c *Collector) Once(ctx context.Context) error {
	defer c.Close()
	if err := c.replay(ctx); err != nil {
		return err
	}
	var quiet func([]string) bool
	for {
		quiet = c.quiet()
		if err := c.pass(ctx, quiet); err != nil {
			return err
		}
		if c.wake.IsZero() {
			break
		}
		select { // a file too new to read yet (see fresh)
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Until(c.wake)):
		}
	}
	return c.endIdle(ctx, quiet)
}

// Run collects until ctx is done: a pass on every change fsnotify reports
// and every Options.Poll. It returns nil when ctx ends, else the error
// that stopped it (a sink failing): a new Collector then reads again what
// spine did not accept, from the saved offsets.
func (c *Collector) Run(ctx context.Context) error {
	defer c.Close()
	w := newWatcher(c.log, !c.opts.NoNotify)
	defer w.close()
	if err := c.replay(ctx); err != nil {
		return err
	}
	tick := time.NewTicker(c.opts.Poll)
	defer tick.Stop()
	for {
		w.watch(c.roots())
		w.watchDir(c.opts.ClaimsDir) // a claim or a run's end may end a file's wait
		err := c.recheck(ctx, time.Now())
		quiet := c.quiet() // one look at each file's time for both
		if err == nil {
			err = c.pass(ctx, quiet)
		}
		if err == nil {
			err = c.endIdle(ctx, quiet)
		}
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		var due <-chan time.Time // a file held as too new (see fresh)
		if !c.wake.IsZero() {
			due = time.After(time.Until(c.wake))
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		case <-w.events:
		case <-due:
		}
	}
}

// replay feeds the translation each file the state knows, in the order
// their lines were first fed (state.Order) and up to where they were fed,
// so every session's seq numbers, pending tool calls and lines seen are
// what they were. Up to a file's saved offset the gate is muted: spine has
// those lines' envelopes. Past it they are sent again, and spine passes
// over what it recorded.
func (c *Collector) replay(ctx context.Context) error {
	if err := c.endsRecorded(ctx); err != nil {
		return err
	}
	if len(c.st.Order) == 0 { // a state from before the order was kept
		for path, saved := range c.st.Files {
			c.st.Order = append(c.st.Order, segment{File: path, End: saved.Offset})
		}
		slices.SortFunc(c.st.Order, func(a, b segment) int { return strings.Compare(a.File, b.File) })
	}
	bad, skip := map[string]bool{}, map[string]bool{}
	for _, seg := range slices.Clone(c.st.Order) {
		saved := c.st.Files[seg.File]
		format, ok := c.formatOf(seg.File)
		if bad[seg.File] || skip[seg.File] || !ok {
			continue // forgotten, or not collected in this run: kept as it is
		}
		t := c.tails[seg.File]
		if t == nil {
			var err error
			t, err = c.open(source{path: seg.File, format: format})
			if err != nil && !c.gone(seg.File) {
				// Not known deleted (a root missing, a directory unreadable):
				// its offset stays for a later start.
				c.cannotRead(seg.File, err)
				skip[seg.File] = true
				continue
			}
			if err != nil || saved == nil || t.id != saved.ID {
				bad[seg.File] = true // gone or rewritten: read again from the start
				continue
			}
		}
		if t.size < seg.End {
			bad[seg.File] = true // cut
			continue
		}
		if t.offset < saved.Offset {
			c.gate.muted = true
			err := t.read(ctx, min(seg.End, saved.Offset))
			c.gate.muted = false
			if err != nil {
				return err
			}
			c.tr.Absorb() // spine has it: counted where first read
		}
		if err := t.read(ctx, seg.End); err != nil {
			return err
		}
	}
	for path := range bad {
		c.forget(path)
	}
	// The usage the replay read is taken as shown: spine has it, or will
	// have it at the next change (sent again, it would be stored twice
	// under another place).
	c.gate.muted = true
	err := c.tr.PublishUsage(ctx, nil)
	c.gate.muted = false
	if err != nil {
		return err
	}
	if a, ok := c.opts.Sink.(interface{ AskEach() }); ok {
		a.AskEach() // from now on, sessions spine started since must be seen
	}
	return nil
}

// formatOf is the format of a file under one of the collected roots.
func (c *Collector) formatOf(path string) (apps.Format, bool) {
	if c.opts.ClaudeDir != "" && under(path, filepath.Join(c.opts.ClaudeDir, "projects")) {
		return apps.FormatClaudeTranscript, true
	}
	if c.opts.CodexDir != "" && under(path, filepath.Join(c.opts.CodexDir, "sessions")) {
		return apps.FormatCodexRollout, true
	}
	return "", false
}

// under reports whether path lies inside dir.
func under(path, dir string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != "." && !strings.HasPrefix(rel, "..")
}

// pass reads what every file has gained, sends it, and saves the offsets.
// Where each file's complete lines end is found first and saved in the
// state's order before any of them is fed, so that a restart after a
// failure (spine unreachable, the state not saved) feeds them again in the
// order they were fed now. quiet (c.quiet, nil for never) judges which
// sessions are past Options.Idle.
func (c *Collector) pass(ctx context.Context, quiet func([]string) bool) error {
	srcs, err := c.list()
	if err != nil {
		return err
	}
	type feed struct {
		t   *tail
		end int64
	}
	var feeds []feed
	seen := map[string]bool{}
	c.wake = time.Time{}
	for _, src := range srcs {
		seen[src.path] = true
		if c.fresh(src) {
			continue
		}
		t := c.file(src)
		if t == nil {
			continue
		}
		end, err := t.lastLineEnd()
		if err != nil {
			c.cannotRead(src.path, err)
			continue
		}
		if end > t.offset {
			feeds = append(feeds, feed{t, end})
		}
	}
	for _, path := range slices.Collect(maps.Keys(c.st.Files)) {
		if !seen[path] && c.gone(path) {
			c.forget(path) // deleted: spine keeps what it has
		}
	}
	for path := range c.tails {
		if !seen[path] && c.gone(path) {
			c.forget(path)
		}
	}
	if len(feeds) > 0 {
		for _, f := range feeds {
			c.st.fed(f.t.path, f.end)
			if c.st.Files[f.t.path] == nil {
				c.st.Files[f.t.path] = &fileState{ID: f.t.id}
			}
		}
		if err := c.st.save(c.opts.StatePath); err != nil {
			return err
		}
		c.forgot = false
		for _, f := range feeds {
			if err := f.t.read(ctx, f.end); err != nil {
				return err
			}
		}
		// None for files already quiet past --idle (a backfill): their
		// sessions end now, with that usage.
		if err := c.tr.PublishUsage(ctx, quiet); err != nil {
			return err
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

// recheck asks spine again where every open session stands when the last
// pass was longer ago than Options.Idle by the wall clock (the machine
// slept: the monotonic clock stood still): spine's idle sweeper may have
// ended a session meanwhile, and its later lines are then a continuation,
// not chunks spine refuses (apps.Translator.Recheck). Options.Idle must
// stay below the server's SPINE_SESSION_IDLE_TIMEOUT for a session to be
// ended by the collector, with its usage, before the sweeper would.
func (c *Collector) recheck(ctx context.Context, now time.Time) error {
	now = now.Round(0) // the wall clock: it goes on while the machine sleeps
	gap := c.opts.Idle
	if gap < 0 {
		gap = DefaultIdle
	}
	last := c.lastPass
	c.lastPass = now
	if last.IsZero() || now.Sub(last) <= gap {
		return nil
	}
	c.log.Info("a long gap since the last pass: asking spine where the sessions stand", "gap", now.Sub(last))
	return c.tr.Recheck(ctx)
}

// claimWait is how long a new file that is being written is left unread
// after it is first listed while a spine run is running here (runLive):
// spine run claims its session (see Claim) as soon as the app names it on
// its output, about when the app begins the transcript, so the collector
// finds the claim before it reads a line.
const claimWait = time.Second

// fresh reports whether a file the collector has never read is too new to
// read yet: written within claimWait, first listed less than claimWait
// ago, a spine run live on this machine and the session the file's name
// says not claimed. It sets c.wake to when the next pass may read it.
func (c *Collector) fresh(src source) bool {
	path := src.path
	if c.tails[path] != nil || c.st.Files[path] != nil {
		delete(c.firstSeen, path)
		return false
	}
	fi, err := os.Stat(path)
	now := c.now()
	if err != nil || now.Sub(fi.ModTime()) >= claimWait {
		delete(c.firstSeen, path)
		return false // older than any claim could be late
	}
	if claimed(c.opts.ClaimsDir, fileSession(path, src.format)) || !runLive(c.opts.ClaimsDir) {
		delete(c.firstSeen, path)
		return false // claimed (the gate leaves it alone), or no run to claim it
	}
	first, ok := c.firstSeen[path]
	if !ok {
		first = now
		c.firstSeen[path] = now
	}
	due := first.Add(claimWait)
	if !now.Before(due) {
		delete(c.firstSeen, path)
		return false
	}
	if c.wake.IsZero() || due.Before(c.wake) {
		c.wake = due
	}
	return true
}

// endIdle ends the sessions whose files have all been quiet for
// Options.Idle (their modification times), and sends the ends. A file that
// is gone is quiet. Only ends are sent: no offset moves. The sessions to
// end are listed in the state (state.Ending) before their ends are sent,
// so a crash after spine took them still makes the next start wait for
// them; the ends of earlier passes spine has recorded are dropped first.
// quiet is the pass's (c.quiet): EndQuiet ends what Quiet listed.
func (c *Collector) endIdle(ctx context.Context, quiet func([]string) bool) error {
	if quiet == nil {
		return nil
	}
	if err := c.dropRecordedEnds(ctx); err != nil {
		return err
	}
	ending := c.tr.Quiet(quiet)
	if len(ending) == 0 {
		return nil
	}
	before := len(c.st.Ending)
	c.st.Ending = append(c.st.Ending, ending...)
	if err := c.st.save(c.opts.StatePath); err != nil {
		return err
	}
	ended, err := c.tr.EndQuiet(ctx, quiet)
	if err != nil {
		return err
	}
	c.log.Info("idle sessions ended", "sessions", ended)
	stats, err := c.opts.Sink.Flush(ctx)
	c.duplicates = stats.Duplicates
	if err != nil {
		return err
	}
	// What was ended, which may be a continuation where Quiet named the
	// session by its own id.
	c.st.Ending = append(c.st.Ending[:before], ended...)
	return c.st.save(c.opts.StatePath)
}

// quiet is the loop's quietSince, nil when sessions never idle
// (Options.Idle below 0).
func (c *Collector) quiet() func([]string) bool {
	if c.opts.Idle < 0 {
		return nil
	}
	return c.quietSince(time.Now().Add(-c.opts.Idle))
}

// quietSince judges whether files have all had no new line since cutoff
// (their modification times; a file gone is quiet), each set of files once:
// asked again, it answers as it did.
func (c *Collector) quietSince(cutoff time.Time) func(files []string) bool {
	judged := map[string]bool{}
	return func(files []string) bool {
		key := strings.Join(files, "\x00")
		if q, ok := judged[key]; ok {
			return q
		}
		q := true
		for _, f := range files {
			if fi, err := os.Stat(f); err == nil && fi.ModTime().After(cutoff) {
				q = false
			}
		}
		judged[key] = q
		return q
	}
}

// dropRecordedEnds drops from state.Ending the sessions spine has recorded
// as ended (or does not have), once asked.
func (c *Collector) dropRecordedEnds(ctx context.Context) error {
	if len(c.st.Ending) == 0 {
		return nil
	}
	var left []string
	for _, id := range c.st.Ending {
		r, err := c.opts.Sink.Recorded(ctx, id)
		if err != nil {
			return err
		}
		if r.Started && !r.Ended {
			left = append(left, id)
		}
	}
	if len(left) == len(c.st.Ending) {
		return nil
	}
	c.st.Ending = left
	return c.st.save(c.opts.StatePath)
}

// endsRecorded waits, before a start-up asks spine where the sessions
// stand, until spine has recorded the ends the last run sent (state.Ending):
// spine accepts an envelope before it records it, and a session it still
// reads as running would be sent more chunks after its end, which it
// refuses. A wait past endWait is an error: the command starts again
// later (an end spine never records — refused, say — stops collection
// until it is taken out of the state file).
func (c *Collector) endsRecorded(ctx context.Context) error {
	deadline := time.Now().Add(endWait)
	for {
		if err := c.dropRecordedEnds(ctx); err != nil || len(c.st.Ending) == 0 {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("spine has not recorded the end of session %s the last run sent, after %s", c.st.Ending[0], endWait)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(endPoll):
		}
	}
}

// endWait bounds endsRecorded; endPoll is how often it asks.
var (
	endWait = 30 * time.Second
	endPoll = 100 * time.Millisecond
)

// gone reports whether a file is known to be deleted: it does not exist,
// and the nearest directory above it that does, inside the collected
// roots, can be read. A root that is missing or a directory that cannot
// be read proves nothing: its files keep their offsets.
func (c *Collector) gone(path string) bool {
	if _, err := os.Lstat(path); !errors.Is(err, fs.ErrNotExist) {
		return false
	}
	for _, root := range c.roots() {
		if !under(path, root) {
			continue
		}
		dir := filepath.Dir(path)
		for {
			d, err := os.Open(dir)
			if err == nil {
				_, err = d.Readdirnames(1)
				d.Close()
				return err == nil || errors.Is(err, io.EOF)
			}
			if !errors.Is(err, fs.ErrNotExist) || dir == root {
				return false
			}
			dir = filepath.Dir(dir)
		}
	}
	return false
}

// cannotRead logs a file that cannot be read, once until it can again.
func (c *Collector) cannotRead(path string, err error) {
	if !c.unreadable[path] {
		c.unreadable[path] = true
		c.log.Warn("file cannot be read: skipped until it can", "file", path, "err", err)
	}
}

// Stats are what a Collector has sent so far.
type Stats struct {
	Sent int // envelopes passed to the sink
	// Duplicates are envelopes spine already had: a file rewritten or
	// read again from the start, or lines past a saved offset sent again
	// after a failure, which spine had stored but not yet read back.
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
		saved := c.st.Files[path]
		if saved == nil || saved.Offset != t.offset || saved.ID != t.id {
			c.st.Files[path] = &fileState{Offset: t.offset, Lines: t.lines, ID: t.id}
			changed = true
		}
	}
	if !changed {
		return nil
	}
	return c.st.save(c.opts.StatePath)
}

// file is one listed file's tail, its size and identity just taken; nil
// when it cannot be read now (logged) or vanished since the listing.
func (c *Collector) file(src source) *tail {
	t := c.tails[src.path]
	if t != nil {
		if err := t.restat(); err != nil {
			if !errors.Is(err, fs.ErrNotExist) {
				c.cannotRead(src.path, err)
			}
			return nil // vanished: forgotten once known gone
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
			if !errors.Is(err, fs.ErrNotExist) {
				c.cannotRead(src.path, err)
			}
			return nil
		}
	}
	delete(c.unreadable, src.path)
	return t
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

// forget drops a file's tail, offset and place in the order.
func (c *Collector) forget(path string) {
	delete(c.tails, path)
	if slices.ContainsFunc(c.st.Order, func(s segment) bool { return s.File == path }) {
		c.st.drop(path)
		c.forgot = true
	}
	if _, ok := c.st.Files[path]; ok {
		delete(c.st.Files, path)
		c.forgot = true
	}
}
