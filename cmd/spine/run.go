package main

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/spinehq/spine/accounting"
	"github.com/spinehq/spine/apps"
	"github.com/spinehq/spine/importer"
	"github.com/spinehq/spine/streams"
)

// runRun is `spine run`, the cockpit: it starts the app headless with its
// machine-readable output, translates each line as it comes (the same
// translation, and the same ids, as `spine import` of that output), sends
// the envelopes to spine at once, shows a readable rendering and exits with
// the app's exit code (docs/run.md).
func runRun(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	app := fs.String("app", "claude-code", "the app to run: claude-code or codex")
	bin := fs.String("bin", "", "the app's binary (default claude or codex on PATH)")
	billing := fs.String("billing", "", "stamp the session subscription or metered (default: what the output says, else unknown)")
	urlFlag := fs.String("url", "", "spine HTTP API (default $SPINE_URL or http://127.0.0.1:7070)")
	token := fs.String("token", "", "bearer token (default $SPINE_TOKEN); the session belongs to its member")
	quiet := fs.Bool("quiet", false, "show nothing of the run on the terminal")
	save := fs.String("save", "", "also write the app's output, as read, to `FILE` (spine import FILE records it later)")
	level := fs.String("level", "", "run the app at `LEVEL`: fast, strong or reasoning (its model and effort flags from the levels table)")
	levelsFile := fs.String("levels", "", "the levels table overriding the built-in one (default levels.json in spine's config directory)")
	spoolFlag := fs.String("spool", "", "the spool `DIR` (default $SPINE_SPOOL_DIR, else spine/spool in the user's config directory)")
	spoolMax := fs.Int64("spool-max", defaultSpoolMax, "the bytes the spool directory may hold, every run's together")
	asJSON := fs.Bool("json", false, "print each envelope of the run, as sent to spine, as a JSON line instead of the readable rendering")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: spine run [flags] -- ARGS...\n\nRuns Claude Code (claude -p ARGS... --output-format stream-json --verbose) or Codex\n(codex exec --json ARGS...) and records the session in spine as it runs.\nExits with the app's exit code.")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *quiet && *asJSON {
		return usageError{"--quiet shows nothing and --json prints every envelope: pass one"}
	}
	if *billing != "" && *billing != "subscription" && *billing != "metered" {
		return usageError{fmt.Sprintf("--billing %q: want subscription or metered", *billing)}
	}
	argv, format, err := appArgs(*app, fs.Args())
	if err != nil {
		return usageError{err.Error()}
	}
	if *level != "" {
		path := *levelsFile
		if path == "" {
			if path, err = levelsPath(); err != nil {
				return err
			}
		}
		table, err := loadLevels(path)
		if err != nil {
			return usageError{err.Error()}
		}
		if argv, err = withLevel(table, *app, *level, argv); err != nil {
			return usageError{err.Error()}
		}
	}
	path := *bin
	if path == "" {
		name := appBinary[*app]
		if path, err = exec.LookPath(name); err != nil {
			return fmt.Errorf("%s is not on PATH: install it or pass --bin", name)
		}
	}
	c, err := newClient(*urlFlag, *token)
	if err != nil {
		return err
	}
	dir, err := spoolDir(*spoolFlag)
	if err != nil {
		return err
	}
	spec := runSpec{Bin: path, Argv: argv, Format: format, Billing: *billing, API: c, Save: *save, Signals: true,
		SpoolDir: dir, SpoolMax: *spoolMax, Leftovers: true}
	if *level != "" {
		spec.Stamp = func(e *streams.Envelope) {
			if e.Type == streams.TypeSessionStart {
				e.Level = *level // the level asked for; the end says the model the app reported
			}
		}
	}
	switch {
	case *quiet:
	case *asJSON:
		spec.Show = showJSON(stdout)
	default:
		spec.Show = render(stdout)
	}
	res, err := runApp(ctx, spec)
	if err != nil {
		return err
	}
	if !res.Recorded && res.Code == 0 {
		return appExit(notRecordedCode)
	}
	if res.Code != 0 {
		return appExit(res.Code)
	}
	if res.Status == "cancelled" {
		return appExit(130) // stopped, though the app exited 0 on its signal (Claude Code does): not a success
	}
	return nil
}

// appExit is the app's exit code, spine run's own.
type appExit int

func (e appExit) Error() string { return fmt.Sprintf("the app exited with status %d", int(e)) }

// appArgs are the app's arguments for a headless run with machine-readable
// output: the flags that gives are added where the user left them out.
func appArgs(app string, args []string) ([]string, apps.Format, error) {
	switch app {
	case "claude-code":
		if i := slices.IndexFunc(args, func(a string) bool { return a == "--output-format" || strings.HasPrefix(a, "--output-format=") }); i >= 0 {
			v, _ := strings.CutPrefix(args[i], "--output-format=")
			if v == args[i] && i+1 < len(args) {
				v = args[i+1]
			}
			if v != "stream-json" {
				return nil, "", fmt.Errorf("spine run reads --output-format stream-json, not %q: leave the flag out", v)
			}
		} else {
			args = append(args, "--output-format", "stream-json")
		}
		if !slices.Contains(args, "--verbose") {
			args = append(args, "--verbose") // stream-json in print mode needs it
		}
		if !slices.Contains(args, "-p") && !slices.Contains(args, "--print") {
			args = append([]string{"-p"}, args...)
		}
		return args, apps.FormatClaudeStream, nil
	case "codex":
		if len(args) == 0 || args[0] != "exec" {
			args = append([]string{"exec"}, args...)
		}
		if !slices.Contains(args, "--json") {
			args = slices.Insert(args, 1, "--json")
		}
		return args, apps.FormatCodexExec, nil
	}
	if app == "embeddings" {
		return nil, "", fmt.Errorf("--app %w", errEmbeddings)
	}
	return nil, "", fmt.Errorf("--app %q: want claude-code or codex", app)
}

// runSpec is one run of an app for runApp: what to start, how to record
// it and what to show of it.
type runSpec struct {
	// Bin is the app's binary, Argv its arguments as appArgs made them
	// (headless, machine-readable output) and Format that output's format.
	Bin    string
	Argv   []string
	Format apps.Format
	// Billing stamps the session: subscription, metered, or "" for what
	// the output says (else unknown).
	Billing string
	// API is spine's HTTP API the envelopes go to (a *client): the token's
	// member owns the session.
	API importer.API
	// Show is handed each envelope of the run, redacted, as the
	// translation makes it (a session spine already has still shows); nil
	// shows nothing.
	Show func(*streams.Envelope)
	// Save, when set, is a file the app's output is written to as read,
	// for a later spine import.
	Save string
	// Stamp, when set, is called on each envelope before it is sent (and
	// shown): the runner sets the start's taskId. It must not change the
	// envelope's id, type, session or seq.
	Stamp func(*streams.Envelope)
	// Signals: SIGINT, SIGTERM and SIGHUP to this process are passed to
	// the app (a second one kills it), as spine run does. Without it the
	// caller's own signal handling stands and only ctx stops the app.
	Signals bool
	// Dir is the app's working directory; "" is this process's (the
	// runner runs a task in the workspace its config allows).
	Dir string
	// SpoolDir is the spool directory (spoolDir), SpoolMax the bytes it
	// may hold (0: defaultSpoolMax).
	SpoolDir string
	SpoolMax int64
	// NoStdin gives the app no stdin (/dev/null) instead of this
	// process's: nobody types to a runner's task, and Codex reads a stdin
	// that is not a terminal to its end before it starts.
	NoStdin bool
	// Leftovers: also deliver what earlier runs left in the spool, with
	// this run's token, before asking spine about the session (spine run
	// in its spool; the runner in its own spool directory, where only its
	// earlier tasks' files are: docs/runner.md).
	Leftovers bool
}

// appBinary is the command each app is on PATH as.
var appBinary = map[string]string{"claude-code": "claude", "codex": "codex"}

// showJSON prints each envelope as one JSON line (--json), as sent: spine
// makes the token's member the owner. JSON escapes control characters.
func showJSON(w io.Writer) func(*streams.Envelope) {
	return func(e *streams.Envelope) {
		c := *e
		c.Owner = nil
		if data, err := c.Marshal(); err == nil {
			fmt.Fprintf(w, "%s\n", data)
		}
	}
}

// runResult is how a run ended.
type runResult struct {
	// Code is the app's exit code (128+N when signal N killed it).
	Code int
	// Status is the session's end: done, failed or cancelled.
	Status string
	// SessionID is spine's session id, AppSessionID the app's own (what
	// claude --resume and codex exec resume take); "" when the output named
	// no session.
	SessionID, AppSessionID string
	// Model, Usage and Cost are as the app's output reported them (Cost nil
	// when it reported none).
	Model string
	Usage streams.Usage
	Cost  *float64
	// Text is the assistant's prose since its last action or the
	// prompt, as shown (redacted): its answer, on a run that ends
	// answering.
	Text string
	// Recorded is false when spine did not take all of the session: Lost
	// envelopes not kept (the spool was full), Refused refused by spine,
	// Waiting left in the spool for a later run or spine spool.
	Recorded bool
	Lost     int
	Refused  int
	Waiting  int
}

// runApp runs one app session and records it in spine live: it is spine
// run's machinery, and spine runner runs each task through it. It starts
// spec.Bin with spec.Argv, translates each line of its stdout as it comes
// (the same translation, and the same ids, as spine import of that
// output), sends the envelopes at once, shows them (spec.Show) and waits
// for the app. The app's stderr is this process's and its stdin too.
//
// ctx stops the app: when ctx is done the app gets SIGINT (or, with
// spec.Signals, the signal this process got), is killed killGrace later,
// and the session ends cancelled with context.Cause(ctx) as why; a caller
// stopping the app for its own reason (the runner: a cancel requested, a
// lost lease) cancels ctx with that cause. Envelopes still go to spine
// for flushGrace after the app's exit once ctx is done: runApp always
// returns.
//
// Spine failing to take an envelope does not stop the app: the rest of
// its output is still read and shown, the failure is told on stderr and
// the result is not Recorded. An error is runApp's own: the app could not
// start, or Save could not be created.
func runApp(ctx context.Context, spec runSpec) (runResult, error) {
	// A closed terminal pipe (spine run | head) fails the rendering's
	// writes (EPIPE) instead of killing spine run and, with it, the
	// recording; the app starts with SIGPIPE as it was (handled signals
	// are reset on exec, ignored ones would not be).
	sigpipeOnce.Do(func() { signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE) })
	var sigs chan os.Signal // nil without spec.Signals: never ready
	if spec.Signals {
		sigs = make(chan os.Signal, 4)
		signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
		defer signal.Stop(sigs)
	}
	if spec.SpoolDir == "" {
		dir, err := spoolDir("")
		if err != nil {
			return runResult{}, err
		}
		spec.SpoolDir = dir
	}
	sp, err := openSpool(spec.SpoolDir, cmp.Or(spec.SpoolMax, defaultSpoolMax), targetOf(spec.API))
	if err != nil {
		return runResult{}, err
	}
	out, w, err := os.Pipe()
	if err != nil {
		sp.close(true)
		return runResult{}, err
	}
	defer out.Close()
	var raw io.Reader = out
	if spec.Save != "" {
		f, err := os.OpenFile(spec.Save, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o600) // the output holds prompts
		if err != nil {
			w.Close()
			sp.close(true)
			return runResult{}, err
		}
		defer f.Close()
		raw = io.TeeReader(out, f) // the output as read, for a later spine import
	}
	cmd := exec.Command(spec.Bin, spec.Argv...)
	cmd.Stdout, cmd.Stderr, cmd.Dir = w, os.Stderr, spec.Dir
	if !spec.NoStdin {
		cmd.Stdin = os.Stdin
	}
	// With no terminal to read, the app gets a process group of its own,
	// so a signal and the kill reach what it started (a tool's command)
	// too. With one it shares spine run's: a background group reading the
	// terminal would be stopped (docs/run.md).
	group := !hasTerminal()
	if group {
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	}
	defer markRun()() // before the app writes its transcript, for the app's life
	err = cmd.Start()
	w.Close()
	if err != nil {
		sp.close(true)
		return runResult{}, err
	}
	// Wait runs beside the reading: a child the app left behind holding
	// its stdout does not keep spine run waiting (drainGrace).
	exited := make(chan struct{})
	var werr error
	go func() {
		werr = cmd.Wait()
		close(exited)
		_ = out.SetReadDeadline(time.Now().Add(drainGrace))
	}()
	// A cancel from spine (the owner's spine cancel) stops the app as a
	// signal would: watchCancel cancels actx.
	actx, cancelApp := context.WithCancelCause(ctx)
	defer cancelApp(nil)
	stop := forward(actx, appProcess{cmd.Process, group}, sigs, exited)
	// Envelopes still go to spine after spine run is told to stop: the
	// cancelled end is the last of them, sent within flushGrace of the
	// app's exit.
	pctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	defer cancel()
	// After the app exited, a signal (a second Ctrl-C, say) abandons the
	// sending at once: what is left stays in the spool.
	go func() {
		select {
		case <-exited:
		case <-pctx.Done():
			return
		}
		stopped := actx.Done()
		var grace <-chan time.Time
		for {
			select {
			case <-stopped:
				stopped, grace = nil, time.After(drainGrace+flushGrace)
				continue
			case <-grace:
			case s := <-sigs:
				fmt.Fprintf(os.Stderr, "spine run: %v: not waiting for spine any more\n", s)
			case <-pctx.Done(): // runApp returning ends the wait (the runner goes on)
				return
			}
			cancel()
			return
		}
	}()
	rs := &runSink{api: spec.API, stamp: spec.Stamp, sp: sp}
	if err := rs.start(pctx); err != nil {
		_ = cmd.Process.Kill()
		sp.close(true)
		return runResult{}, err
	}
	go watchCancel(pctx, spec.API, rs.started, exited, cancelApp)
	left := make(chan struct{})
	rs.leftovers = left
	go func() { // what earlier runs left in the spool
		defer close(left)
		if !spec.Leftovers {
			return
		}
		res, err := sendLeftovers(pctx, spec.API, spec.SpoolDir, false, rs.leftSeen)
		if len(res.left) > 0 {
			fmt.Fprintf(os.Stderr, "spine run: %d spool files of earlier runs not delivered yet: %v\n", len(res.left), err)
		}
		if len(res.others) > 0 {
			fmt.Fprintf(os.Stderr, "spine run: %d spool files of earlier runs are for another spine or member: spine spool lists them\n", len(res.others))
		}
	}()
	var res runResult
	owner, src := streams.Owner{Org: "dev", Member: "dev"}, apps.Source{Path: filepath.Base(spec.Bin) + " stdout", ModTime: time.Now(), Format: spec.Format}
	tr := apps.NewTranslator(apps.Options{Owner: owner, Billing: spec.Billing, Sink: rs, Live: true, NewOutput: true,
		Seen: claimSession})
	st := tr.Stream(src)
	// The rendering is a translation of its own that takes every session
	// as new, so a session spine already has (recorded before, resumed)
	// still shows on the terminal; the result is read from it too.
	shown := &showSink{show: spec.Show, stamp: spec.Stamp, res: &res}
	sh := apps.NewTranslator(apps.Options{Owner: owner, Billing: spec.Billing, Sink: shown, Live: true, Ended: shown.ended})
	shst := sh.Stream(src)
	translate(pctx, apps.NewLineReader(bufio.NewReaderSize(raw, 1<<20)), st, shst, rs)
	<-exited
	code, status, why := exitOf(cmd, werr, stop())
	if spec.Billing == "" && spec.Format == apps.FormatCodexExec { // exec --json says nothing of billing
		b := codexBilling(st.AppSessionID())
		st.Billing(b)
		shst.Billing(b)
	}
	if err := st.Done(pctx); err != nil {
		rs.fail(err)
	}
	st.Exit(code, status, why)
	if err := tr.Finish(pctx); err != nil {
		rs.fail(err)
	}
	_ = shst.Done(pctx)
	shst.Exit(code, status, why)
	_ = sh.Finish(pctx)
	rs.close(pctx)
	rs.d.close()
	waiting := rs.sp.written - rs.d.taken - len(rs.d.refusals) - rs.d.lost
	res.Code = code
	if res.Status == "" { // the output named no session: nothing ended
		res.Status = map[bool]string{true: "done", false: status}[status == ""]
	}
	for _, r := range rs.d.refusals {
		fmt.Fprintf(os.Stderr, "spine run: spine refused %s: %s: %s\n", r.ID, r.Code, r.Reason)
	}
	res.Lost, res.Refused, res.Waiting = rs.sp.full+rs.d.lost, len(rs.d.refusals), waiting
	res.Recorded = rs.err == nil && res.Lost == 0 && waiting == 0 && res.Refused == 0
	rs.sp.close(waiting == 0)
	if !res.Recorded {
		why := cmp.Or(rs.err, rs.waitErr)
		if why == nil && waiting > 0 {
			why = fmt.Errorf("spine took nothing for %s", flushGrace)
		}
		fmt.Fprintf(os.Stderr, "spine run: the session is not fully recorded: %d envelopes not kept (the spool is full, or a write torn), %d refused, %d wait in the spool",
			res.Lost, res.Refused, waiting)
		if why != nil {
			fmt.Fprintf(os.Stderr, ": %v", why)
		}
		fmt.Fprintln(os.Stderr)
		if waiting > 0 {
			fmt.Fprintf(os.Stderr, "spine run: %s keeps them: the next spine run, or spine spool, delivers them\n", rs.sp.path)
		}
		if spec.Save != "" {
			fmt.Fprintf(os.Stderr, "spine run: the output is in %s: spine import %s records it\n", spec.Save, spec.Save)
		}
	}
	select { // the leftovers, while spine takes them
	case <-left:
	case <-time.After(flushGrace):
		cancel() // and wait for it to let go of the file it holds
		<-left
	}
	return res, nil
}

// sigpipeOnce: SIGPIPE is handled once per process, however many runs
// (the runner's tasks) runApp makes.
var sigpipeOnce sync.Once

// notRecordedCode is spine run's exit for a run spine did not fully take
// when the app itself exited 0 (docs/run.md).
const notRecordedCode = 75

// How long spine run gives the app to stop after passing it a signal
// before it kills it, how long it goes on reading the app's output after
// the app exited (a child left behind may hold it open), and how long it
// goes on sending to spine after that once it was told to stop.
var (
	killGrace  = 10 * time.Second
	drainGrace = 2 * time.Second
	flushGrace = 10 * time.Second
)

// forward passes the first signal to spine run to the app as it came
// (SIGINT, SIGTERM, SIGHUP; ctx done without one, as in a test: SIGINT).
// A second signal, or the app still running killGrace later, kills it
// (SIGKILL). Call stop once the app has exited (exited closed): it says
// why spine run was stopped, nil when it was not.
func forward(ctx context.Context, p appProcess, sigs <-chan os.Signal, exited <-chan struct{}) (stop func() error) {
	var cancelled error
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		var first os.Signal
		select {
		case first = <-sigs:
			cancelled = fmt.Errorf("%v", first)
		case <-ctx.Done():
			cancelled = context.Cause(ctx)
			first = syscall.SIGINT
			select { // the signal that cancelled ctx, when one did
			case s := <-sigs:
				first = s
			case <-time.After(50 * time.Millisecond):
			}
		case <-exited:
			return
		}
		_ = p.Signal(first)
		select {
		case <-sigs:
		case <-time.After(killGrace):
		case <-exited:
			return
		}
		fmt.Fprintln(os.Stderr, "spine run: killing the app")
		_ = p.Kill()
	}()
	return func() error {
		<-watched // cancelled is set, or never will be
		return cancelled
	}
}

// appProcess is the app, signalled alone or, when it leads a process
// group of its own, with its group.
type appProcess struct {
	p     *os.Process
	group bool
}

// Signal sends sig to the app (and its group).
func (a appProcess) Signal(sig os.Signal) error {
	if s, ok := sig.(syscall.Signal); ok && a.group {
		return syscall.Kill(-a.p.Pid, s)
	}
	return a.p.Signal(sig)
}

// Kill kills the app (and its group).
func (a appProcess) Kill() error { return a.Signal(syscall.SIGKILL) }

// hasTerminal: this process has a controlling terminal (it can open
// /dev/tty), which an app may read.
func hasTerminal() bool {
	f, err := os.Open("/dev/tty")
	if err != nil {
		return false
	}
	f.Close()
	return true
}

// translate reads the app's output to its end, each line into the
// translation as it comes (and into the rendering's, shown); a line not recorded is told on stderr.
func translate(ctx context.Context, rr apps.RecordReader, st, shown *apps.Stream, rs *runSink) {
	for {
		rec, err := rr.Next()
		var le *apps.LineError
		if errors.As(err, &le) {
			fmt.Fprintf(os.Stderr, "spine run: output %v: not recorded\n", le)
			continue
		}
		if err != nil {
			return // io.EOF: the app closed its output
		}
		rec.At = time.Now()
		_, _ = shown.Record(ctx, rec)
		if skip, err := st.Record(ctx, rec); err != nil {
			rs.fail(err)
		} else if skip != "" {
			fmt.Fprintf(os.Stderr, "spine run: output line %d not recorded: %s\n", rec.N, skip)
		}
	}
}

// exitOf is the app's exit code and, when it did not exit on its own
// accord with a code, the status its session ends with: cancelled when
// spine run passed it a signal, failed when it died or could not be waited
// for. A signal's code is 128 plus its number, as a shell reports it.
func exitOf(cmd *exec.Cmd, werr, cancelled error) (code int, status, why string) {
	ws, _ := cmd.ProcessState.Sys().(syscall.WaitStatus)
	switch {
	case cancelled != nil:
		code = cmd.ProcessState.ExitCode()
		if ws.Signaled() {
			code = 128 + int(ws.Signal())
		}
		return code, "cancelled", "spine run was stopped: " + cancelled.Error()
	case ws.Signaled():
		return 128 + int(ws.Signal()), "failed", fmt.Sprintf("the app was killed by signal %d (%v)", ws.Signal(), ws.Signal())
	case werr != nil && cmd.ProcessState.ExitCode() < 0:
		return 1, "failed", werr.Error()
	case cmd.ProcessState.ExitCode() != 0:
		code = cmd.ProcessState.ExitCode()
		return code, "failed", fmt.Sprintf("the app exited with status %d", code)
	}
	return 0, "", ""
}

// runSink writes each envelope to the run's spool (spool.go) as the
// translation makes it, and a goroutine of its own delivers the spool to
// spine: spine unreachable or slow never slows the reading of the app's
// output. client.do retries what spine may answer if asked again; when it
// gives up (spine down longer), the delivery pauses and goes on from where
// spine stopped taking, for as long as the run lives and flushGrace after
// its end while spine takes something. What spine has not taken then stays
// in the spool for a later spine run or spine spool.
type runSink struct {
	api   importer.API
	stamp func(*streams.Envelope)
	sp    *spool
	d     *delivery

	mu      sync.Mutex // err, waitErr
	err     error      // the first failure: an envelope not recorded
	waitErr error      // the last error the delivery waited on

	closed   chan struct{}
	sent     chan struct{}
	stop     context.CancelFunc
	progress atomic.Int64 // unix nanoseconds spine last took something

	// started is sent the session's id once its start is spooled.
	started chan string

	// leftovers is closed once the earlier runs' leftovers were delivered
	// (or not: spine down); left is what they held (leftSeen), under mu.
	leftovers <-chan struct{}
	left      map[string]leftSession
}

// start starts delivering the spool to spine with ctx.
func (r *runSink) start(ctx context.Context) error {
	d, err := openDelivery(r.api, r.sp.path)
	if err != nil {
		return err
	}
	d.took = r.sp.took
	r.d, r.closed, r.sent, r.started = d, make(chan struct{}), make(chan struct{}), make(chan string, 1)
	ctx, r.stop = context.WithCancel(ctx)
	go func() {
		defer close(r.sent)
		r.deliver(ctx)
	}()
	return nil
}

// deliver sends the spool until it is closed and all sent, a failure
// stops it, or ctx is done.
func (r *runSink) deliver(ctx context.Context) {
	closing := false
	for {
		n, err := r.d.step(ctx)
		switch {
		case n > 0:
			r.progress.Store(time.Now().UnixNano())
		case err == nil && closing:
			return // closed, and all of it sent
		}
		switch {
		case err == nil:
		case ctx.Err() != nil:
			return
		case spoolWaiting(err):
			r.mu.Lock()
			r.waitErr = err
			r.mu.Unlock()
			select {
			case <-time.After(spoolPause):
			case <-ctx.Done():
				return
			}
			continue
		default: // a refused token, say: asking again would be refused the same way
			r.fail(err)
			return
		}
		if n > 0 {
			continue
		}
		r.sp.compact(r.d)
		select {
		case <-r.sp.more:
		case <-r.closed:
			closing = true
		case <-ctx.Done():
			return
		}
	}
}

// close waits for the spool to be sent, while spine goes on taking it:
// once it took nothing for flushGrace, or ctx is done, the rest is left
// in the spool.
func (r *runSink) close(ctx context.Context) {
	close(r.closed)
	r.progress.Store(time.Now().UnixNano())
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-r.sent:
			return
		case <-ctx.Done():
		case <-tick.C:
			if time.Since(time.Unix(0, r.progress.Load())) < flushGrace {
				continue
			}
		}
		r.stop()
		<-r.sent
		return
	}
}

func (r *runSink) fail(err error) {
	if err == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err == nil {
		r.err = err
	}
}

// recordedWait bounds asking spine whether it has a session, so a spine
// not answering holds the reading of the app's output that long at most;
// leftoverWait bounds waiting, before that, for the leftovers of earlier
// runs to be delivered.
var (
	recordedWait = 2 * time.Second
	leftoverWait = 5 * time.Second
)

// leftSession is what the leftovers delivered of one session: its highest
// seq, and whether its end.
type leftSession struct {
	seq   int64
	ended bool
}

// leftSeen notes a leftover line spine took (sendLeftovers' seen).
func (r *runSink) leftSeen(line []byte) {
	var e struct {
		Type      string `json:"type"`
		SessionID string `json:"sessionId"`
		Seq       int64  `json:"seq"`
	}
	if json.Unmarshal(line, &e) != nil || e.SessionID == "" {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.left == nil {
		r.left = map[string]leftSession{}
	}
	l := r.left[e.SessionID]
	l.seq = max(l.seq, e.Seq)
	l.ended = l.ended || e.Type == streams.TypeSessionEnd
	r.left[e.SessionID] = l
}

// Recorded asks spine for the session (GET /v1/sessions/{id}); a session
// it cannot ask about is taken as new. The leftovers of earlier runs go
// first (for up to leftoverWait): a resumed session whose earlier run's
// end still waited in the spool is spine's, ended, not new. When they held
// some of this session, spine is asked until it shows them (it takes an
// envelope before it projects it), for up to recordedWait.
func (r *runSink) Recorded(ctx context.Context, id string) (apps.Recorded, error) {
	if r.leftovers != nil {
		select {
		case <-r.leftovers:
		case <-time.After(leftoverWait):
		case <-ctx.Done():
		}
	}
	r.mu.Lock()
	want, fromLeft := r.left[id]
	r.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, recordedWait)
	defer cancel()
	var s apps.Recorded // a 404, or no answer: taken as new
	for {
		if cur, err := importer.AskRecorded(ctx, r.api, id); err == nil && cur.Started {
			s = cur
		}
		caughtUp := s.Started && s.LastSeq >= want.seq && (s.Ended || !want.ended)
		if !fromLeft || caughtUp || ctx.Err() != nil {
			break
		}
		select {
		case <-ctx.Done():
		case <-time.After(50 * time.Millisecond):
		}
	}
	// The end's usage, or a running session's so far (a held session's,
	// see apps.Recorded).
	return s, nil
}

// Publish spools e (stamped); one the spool has no room for is counted.
func (r *runSink) Publish(_ context.Context, e *streams.Envelope) error {
	if r.stamp != nil {
		r.stamp(e)
	}
	if r.sp.write(e) && e.Type == streams.TypeSessionStart {
		select {
		case r.started <- e.SessionID:
		default: // a later session of the output: the first is watched
		}
	}
	return nil
}

// cancelPoll is how often spine run asks spine whether its session's
// owner cancelled it.
var cancelPoll = 2 * time.Second

// watchCancel asks spine every cancelPoll, once the session's start was
// made, whether its owner cancelled it (cancelRequestedAt on GET
// /v1/sessions/{id}); when it did, it stops the app (cancel) and the
// session ends cancelled. It returns when the app exits. A poll spine does
// not answer is passed over.
func watchCancel(ctx context.Context, api importer.API, started <-chan string, exited <-chan struct{},
	cancel context.CancelCauseFunc) {
	var id string
	select {
	case id = <-started:
	case <-exited:
		return
	}
	tick := time.NewTicker(cancelPoll)
	defer tick.Stop()
	for {
		select {
		case <-tick.C:
		case <-exited:
			return
		}
		var s struct {
			CancelRequestedAt *time.Time `json:"cancelRequestedAt"`
		}
		pctx, done := context.WithTimeout(ctx, cancelPoll)
		err := api.Do(pctx, http.MethodGet, "/v1/sessions/"+url.PathEscape(id), nil, &s)
		done()
		if err == nil && s.CancelRequestedAt != nil {
			fmt.Fprintln(os.Stderr, "spine run: the session was cancelled in spine: stopping the app")
			cancel(errors.New("the session was cancelled in spine"))
			return
		}
	}
}

// showSink shows each envelope of the rendering's translation, redacted
// (the terminal shows no more than spine keeps), and keeps the run's
// result from it; show nil shows nothing.
type showSink struct {
	show  func(*streams.Envelope)
	stamp func(*streams.Envelope)
	res   *runResult
	prose bool // the last chunk was the assistant's prose
}

func (*showSink) Recorded(context.Context, string) (apps.Recorded, error) {
	return apps.Recorded{}, nil
}

func (s *showSink) Publish(_ context.Context, e *streams.Envelope) error {
	if s.stamp != nil {
		s.stamp(e)
	}
	r := e.Redacted()
	if r.Type == streams.TypeSessionChunk {
		// The user's prompt is prose too ("\n> …"): only the app's own
		// counts as the assistant's text.
		mine := r.Event == nil && r.Stream == "stdout" && !strings.HasPrefix(r.Text, "\n> ")
		if mine && !s.prose {
			s.res.Text = ""
		}
		if mine {
			s.res.Text += r.Text
		}
		s.prose = mine
	}
	if s.show != nil {
		s.show(r)
	}
	return nil
}

// ended keeps the session's end in the result (the last session of the
// output, when it named several).
func (s *showSink) ended(e *apps.Ended) {
	s.res.SessionID, s.res.AppSessionID, s.res.Status = e.SessionID, e.AppSessionID, e.Status
	s.res.Model, s.res.Usage, s.res.Cost = e.Model, e.Tokens, e.Cost
}

// render is the readable rendering of a run: its prose as the app wrote
// it, each action on a line of its own, and the end's status, usage and
// cost.
func render(w io.Writer) func(*streams.Envelope) {
	return func(e *streams.Envelope) {
		switch e.Type {
		case streams.TypeSessionStart:
			fmt.Fprintf(w, "● %s session %s\n", e.App, e.SessionID)
		case streams.TypeSessionChunk:
			if ev := e.Event; ev != nil {
				fmt.Fprintf(w, "  ⎿ %s\n", describe(ev))
				return
			}
			fmt.Fprint(w, e.Text)
		case streams.TypeSessionEnd:
			line := "● " + e.Status
			if e.Model != "" {
				line += " · " + e.Model
			}
			if u := e.Usage; u != nil {
				line += fmt.Sprintf(" · tokens in %d (cache read %d, write %d) out %d", u.InputTokens, u.CacheReadTokens,
					u.CacheWriteTokens, u.OutputTokens)
			}
			if e.TotalCost != nil {
				line += " · " + accounting.FormatCost(*e.TotalCost) + " reported"
			}
			if e.Error != "" {
				line += " · " + e.Error
			}
			fmt.Fprintln(w, line)
		}
	}
}

// describe is one action in a few words.
func describe(ev *streams.Event) string {
	switch ev.Action {
	case "command":
		s := "$ " + firstLine(ev.Command)
		if ev.ExitCode != nil && *ev.ExitCode != 0 {
			s += fmt.Sprintf("  (exit %d)", *ev.ExitCode)
		}
		return s
	case "file_read", "file_write":
		return strings.TrimPrefix(ev.Action, "file_") + " " + ev.Path
	case "fetch":
		return "fetch " + ev.URL
	case "mcp_call":
		return "mcp " + ev.Server + "." + ev.Tool
	}
	return ev.Action
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i] + " …"
	}
	return s
}
