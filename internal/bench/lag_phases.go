package bench

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/spinehq/spine/apps"
)

// planned is one line to write: line n of session s, and what its
// translation makes.
type planned struct {
	s    *lagSession
	n    int
	envs []lagEnvelope
}

// lineWriter writes one line, its newline included, where the producer
// under test reads it.
type lineWriter func(s *lagSession, line []byte) error

// childStop is how long a collector or spine run is given to exit once
// told to, before it is killed.
const childStop = 15 * time.Second

// Producers as the JSON names them.
const (
	collectProducer = "spine collect (the binary, fsnotify and its 2 s poll) tailing a Claude Code and a Codex " +
		"directory; the benchmark appends copies of the fixtures' transcript and rollout lines (fresh ids per copy) " +
		"to the files, a write per line, timed when the write returned"
	runProducer = "spine run --app APP --bin CAT, where CAT is `exec cat`: the benchmark writes copies of the fixtures' " +
		"machine-readable output of APP (Claude Code's stream-json, Codex's exec --json; fresh ids per copy) to spine " +
		"run's stdin, which the app inherits, and cat passes each line to its stdout, which spine run reads as a real " +
		"app's; timed when the write returned. A real app against the fake model writes at the model's pace, a few " +
		"lines a run, and when it writes a line cannot be seen from outside its process, so the app is this one pipe " +
		"hop (microseconds) over real lines"
)

// collectPhase runs `spine collect` on two empty app directories and
// appends lines to up to cfg.Sessions files at once.
func (lb *lagBed) collectPhase(ctx context.Context) (*LagPhase, error) {
	files, err := loadFixtureFiles(lb.cfg.Fixtures, apps.FormatClaudeTranscript, apps.FormatCodexRollout)
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(lb.tb.dir, "lag-collect")
	d, err := newAppDirs(dir)
	if err != nil {
		return nil, err
	}
	copies := 0
	next := func() *lagSession {
		s := copyOf(files[copies%len(files)], lb.tag+"c", copies)
		s.path = d.file(s.format, copies)
		copies++
		return s
	}
	warm, plan, err := lb.plan(ctx, newPredictor(false), next, lb.cfg.Sessions)
	if err != nil {
		return nil, err
	}
	out := appender{}
	defer out.close()
	child, err := lb.start(ctx, nil, "collect", "--claude-dir", d.claude, "--codex-dir", d.codex,
		"--state", filepath.Join(dir, "state.json"), "--machine", "bench-lag")
	if err != nil {
		return nil, err
	}
	phase, err := lb.measure(ctx, warm, plan, out.write)
	if serr := child.stop(); err == nil && serr != nil {
		err = serr
	}
	if err != nil {
		return nil, err
	}
	phase.Producer, phase.Formats = collectProducer, []string{string(apps.FormatClaudeTranscript), string(apps.FormatCodexRollout)}
	phase.Sessions = copies - 1 // the warm-up's is not counted
	return phase, nil
}

// appDirs are a Claude Code and a Codex directory laid out as the apps lay
// them out, with one project folder and one day's rollout folder made
// before the collector starts (a new session's file appears in them).
type appDirs struct {
	claude, codex string
	project, day  string
}

func newAppDirs(dir string) (*appDirs, error) {
	d := &appDirs{claude: filepath.Join(dir, "claude"), codex: filepath.Join(dir, "codex")}
	d.project = filepath.Join(d.claude, "projects", "-home-bench-lag")
	d.day = filepath.Join(d.codex, "sessions", "2026", "01", "25")
	for _, p := range []string{d.project, d.day} {
		if err := os.MkdirAll(p, 0o755); err != nil {
			return nil, err
		}
	}
	return d, nil
}

// file is where session n of a format is written.
func (d *appDirs) file(f apps.Format, n int) string {
	if f == apps.FormatCodexRollout {
		return filepath.Join(d.day, fmt.Sprintf("rollout-2026-01-25T10-32-00-lag-%05d.jsonl", n))
	}
	return filepath.Join(d.project, fmt.Sprintf("lag-%05d.jsonl", n))
}

// appender appends each session's lines to its file, opened once and kept
// open, as the apps keep their transcripts open.
type appender map[*lagSession]*os.File

func (a appender) write(s *lagSession, line []byte) error {
	f := a[s]
	if f == nil {
		var err error
		if f, err = os.OpenFile(s.path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644); err != nil {
			return err
		}
		a[s] = f
	}
	_, err := f.Write(line)
	return err
}

func (a appender) close() {
	for _, f := range a {
		f.Close()
	}
}

// runPhase runs `spine run --app APP` with an app that copies its stdin
// to its stdout, and writes the app's machine-readable output (Claude
// Code's stream-json, Codex's exec --json) to that stdin, one session
// after another.
func (lb *lagBed) runPhase(ctx context.Context, appName string) (*LagPhase, error) {
	format := apps.FormatClaudeStream
	if appName == "codex" {
		format = apps.FormatCodexExec
	}
	files, err := loadFixtureFiles(lb.cfg.Fixtures, format)
	if err != nil {
		return nil, err
	}
	app := filepath.Join(lb.tb.dir, "lag-app")
	script := "#!/bin/sh\n# spine bench lag's app: what is written to its stdin comes out on its stdout\nexec cat\n"
	if err := os.WriteFile(app, []byte(script), 0o755); err != nil {
		return nil, err
	}
	pred := newPredictor(true)
	// spine run translates the app's stdout as one source, named so.
	stream := pred.tr.Stream(apps.Source{Path: filepath.Base(app) + " stdout", Format: format})
	copies := 0
	next := func() *lagSession {
		s := copyOf(files[copies%len(files)], lb.tag+"r"+appName[:2], copies)
		s.stream = stream
		copies++
		return s
	}
	warm, plan, err := lb.plan(ctx, pred, next, 1)
	if err != nil {
		return nil, err
	}
	stdin, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	child, err := lb.start(ctx, stdin, "run", "--app", appName, "--quiet", "--bin", app, "--", "bench lag")
	stdin.Close()
	if err != nil {
		w.Close()
		return nil, err
	}
	write := func(_ *lagSession, line []byte) error {
		_, err := w.Write(line)
		return err
	}
	phase, err := lb.measure(ctx, warm, plan, write, w.Close)
	w.Close() // at the latest: cat ends at its input's end, and spine run with it
	if werr := child.wait(); err == nil && werr != nil {
		err = werr
	}
	if err != nil {
		return nil, err
	}
	phase.Producer, phase.Formats = runProducer, []string{string(format)}
	phase.Sessions = copies - 1
	return phase, nil
}

// plan lays out a phase: a warm-up (every line of one session, not
// measured: the producer starts, connections open, caches fill) and then
// cfg.Lines lines round-robin over up to concurrent sessions, each
// replaced by next when its lines are written. Each line's envelopes are
// predicted in the order they will be written.
func (lb *lagBed) plan(ctx context.Context, pred *predictor, next func() *lagSession, concurrent int) (warm, plan []planned, err error) {
	add := func(list []planned, s *lagSession, n int) ([]planned, error) {
		envs, err := pred.line(ctx, s, n)
		return append(list, planned{s: s, n: n, envs: envs}), err
	}
	w := next()
	for n := range w.lines {
		if warm, err = add(warm, w, n); err != nil {
			return nil, nil, err
		}
	}
	active, pos := make([]*lagSession, concurrent), make([]int, concurrent)
	for i := range active {
		active[i] = next()
	}
	for len(plan) < lb.cfg.Lines {
		i := len(plan) % concurrent
		if pos[i] == len(active[i].lines) {
			active[i], pos[i] = next(), 0
		}
		if plan, err = add(plan, active[i], pos[i]); err != nil {
			return nil, nil, err
		}
		pos[i]++
	}
	return warm, plan, nil
}

// measure writes the warm-up and waits until it is readable, then writes
// the plan at cfg.Rate lines a second, paced as the ingest latency phase
// paces (a ticker, each tick writing what has fallen due), waits until
// every line's envelopes are committed and its text read, and reports.
// after, when given, run once the last line is written (closing the
// app's input, so spine run ends).
func (lb *lagBed) measure(ctx context.Context, warm, plan []planned, write lineWriter, after ...func() error) (*LagPhase, error) {
	for _, p := range warm {
		if _, err := lb.write(p, write); err != nil {
			return nil, err
		}
	}
	if err := lb.obs.wait(ctx); err != nil {
		return nil, fmt.Errorf("warm-up: %w", err)
	}
	at := make([]time.Time, len(plan))
	tick := time.NewTicker(max(time.Second/time.Duration(lb.cfg.Rate), minTick))
	defer tick.Stop()
	start := time.Now()
	for i := 0; i < len(plan); {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-tick.C:
		}
		due := min(len(plan), int(time.Since(start).Seconds()*float64(lb.cfg.Rate)))
		for ; i < due; i++ {
			var err error
			if at[i], err = lb.write(plan[i], write); err != nil {
				return nil, err
			}
		}
	}
	elapsed := time.Since(start)
	for _, f := range after {
		if err := f(); err != nil {
			return nil, err
		}
	}
	if err := lb.obs.wait(ctx); err != nil {
		return nil, err
	}
	return lb.report(plan, at, elapsed), nil
}

// write registers what a line will make, writes it and returns when the
// write returned.
func (lb *lagBed) write(p planned, write lineWriter) (time.Time, error) {
	lb.obs.expect(p.envs)
	line := append(append([]byte(nil), p.s.lines[p.n]...), '\n')
	if err := write(p.s, line); err != nil {
		return time.Time{}, fmt.Errorf("write line: %w", err)
	}
	return time.Now(), nil
}

func (lb *lagBed) report(plan []planned, at []time.Time, elapsed time.Duration) *LagPhase {
	var committed, readable, adds []time.Duration
	for i, p := range plan {
		c, ok := lb.obs.committedAt(p.envs)
		if !ok {
			continue
		}
		committed = append(committed, c.Sub(at[i]))
		if r, ok := lb.obs.readAt(p.envs); ok {
			readable = append(readable, r.Sub(at[i]))
			adds = append(adds, r.Sub(c))
		}
	}
	return &LagPhase{LinesWritten: len(plan), OfferedRate: lb.cfg.Rate,
		AchievedRate: round(float64(len(plan)) / elapsed.Seconds()), Seconds: round(elapsed.Seconds()),
		Committed: figures(committed), Readable: figures(readable), ObserverAdds: figures(adds)}
}

// child is a spine command the benchmark started, with its stderr kept
// for the error that says why it failed.
type child struct {
	cmd    *exec.Cmd
	stderr bytes.Buffer
	name   string
}

// start runs `spine ARGS… --url U --token T` with stdin (nil: none).
func (lb *lagBed) start(ctx context.Context, stdin *os.File, args ...string) (*child, error) {
	c := &child{name: "spine " + args[0]}
	args = append(args[:1:1], append([]string{"--url", lb.base, "--token", lb.token}, args[1:]...)...)
	c.cmd = exec.CommandContext(ctx, lb.cfg.Spine, args...)
	c.cmd.Stderr = &c.stderr
	if stdin != nil {
		c.cmd.Stdin = stdin
	}
	c.cmd.WaitDelay = childStop
	if err := c.cmd.Start(); err != nil {
		return nil, fmt.Errorf("%s: %w", c.name, err)
	}
	return c, nil
}

// stop interrupts the child and waits for it.
func (c *child) stop() error {
	_ = c.cmd.Process.Signal(os.Interrupt)
	return c.wait()
}

// wait waits for the child, killing it after childStop; a non-zero exit
// is an error carrying its stderr.
func (c *child) wait() error {
	done := make(chan error, 1)
	go func() { done <- c.cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			return fmt.Errorf("%s: %w: %s", c.name, err, strings.TrimSpace(c.stderr.String()))
		}
		return nil
	case <-time.After(childStop):
		_ = c.cmd.Process.Kill()
		<-done
		return fmt.Errorf("%s: %w: still running %s after it was told to stop", c.name, ErrStalled, childStop)
	}
}
