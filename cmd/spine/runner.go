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
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spinehq/spine/desktop"
	"github.com/spinehq/spine/internal/config"
)

// runRunner is `spine runner`, the desktop runner: it takes this member's
// remote-session tasks from spine and runs each through spine run's
// machinery (the app recorded live, the session linked to its task), as
// far as the runner config allows (docs/runner.md). `spine runner login`
// signs the machine in first.
func runRunner(ctx context.Context, args []string) error {
	if len(args) > 0 && args[0] == "login" {
		return runnerLogin(ctx, args[1:])
	}
	fs := flag.NewFlagSet("runner", flag.ContinueOnError)
	cfgPath := fs.String("config", "", "the runner config: the apps, workspaces and permissions allowed (default runner-config.json in the config dir)")
	confirm := fs.Bool("confirm", false, "ask y/N on the terminal before each task")
	once := fs.Bool("once", false, "take the tasks queued now, then exit")
	asJSON := fs.Bool("json", false, "print each envelope of each task's run, and the runner's own steps, as JSON lines")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: spine runner [flags]\n       spine runner login [--url URL] [--token MEMBER_TOKEN] [--machine NAME]\n\n"+
			"Runs this member's remote-session tasks on this machine with Claude Code or Codex, as the runner config allows.")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	r, err := newRunner(*cfgPath, *confirm, *asJSON)
	if err != nil {
		return err
	}
	if err := r.register(ctx); err != nil {
		return err
	}
	if *once {
		return r.drain(ctx)
	}
	return r.serve(ctx)
}

// runner is one spine runner process: its credentials, consent and the
// client holding its runner token.
type runner struct {
	creds   *runnerCreds
	consent *consent
	c       *client
	confirm bool
	out     *runnerOut
	// answers are the owner's lines typed on the terminal (--confirm).
	answers  *bufio.Reader
	lines    chan string // answers' lines (typed)
	lineOnce sync.Once
	// spool is the runner's own spool directory (runnerSpoolDir).
	spool string
	// beat and lease are the heartbeat interval and the lease's length
	// spine's registration answer gave (the protocol's 10 s and 60 s when
	// it gave none).
	beat, lease time.Duration
}

// runnerSpoolDir is the runner's spool directory, runner-ID under spine
// run's: its files are its tasks' sessions, which only its token (or the
// member's) may write, so spine run never delivers them and it delivers
// no other's.
func runnerSpoolDir(runnerID string) (string, error) {
	base, err := spoolDir("")
	if err != nil {
		return "", err
	}
	if !strings.HasPrefix(runnerID, "runner-") {
		runnerID = "runner-" + runnerID
	}
	return filepath.Join(base, runnerID), nil
}

func newRunner(cfgPath string, confirm, asJSON bool) (*runner, error) {
	path, err := runnerCredsPath()
	if err != nil {
		return nil, err
	}
	creds, err := loadRunnerCreds(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("this machine is not signed in: %w", errLoginAgain)
	}
	if err != nil {
		return nil, err
	}
	if err := creds.usable(time.Now()); err != nil {
		return nil, err
	}
	if cfgPath == "" {
		dir, err := config.Dir()
		if err != nil {
			return nil, err
		}
		cfgPath = filepath.Join(dir, "runner-config.json")
	}
	cons, err := loadConsent(cfgPath)
	if err != nil {
		return nil, err
	}
	c, err := newClient(creds.URL, creds.Token)
	if err != nil {
		return nil, err
	}
	spool, err := runnerSpoolDir(creds.RunnerID)
	if err != nil {
		return nil, err
	}
	live := runnerLive()
	if confirm && !live {
		return nil, usageError{"--confirm asks on the terminal, and spine runner's output is not one (a service): leave --confirm out, or run spine runner in a terminal"}
	}
	return &runner{creds: creds, consent: cons, c: c, confirm: confirm, out: &runnerOut{json: asJSON, live: live},
		answers: bufio.NewReader(runnerAnswers), spool: spool}, nil
}

// runnerAnswers is where --confirm reads the owner's answers (tests set it).
var runnerAnswers io.Reader = os.Stdin

// call is one runner request; a 401 says to sign in again.
func (r *runner) call(ctx context.Context, method, path string, body, out any) error {
	var data []byte
	if body != nil {
		var err error
		if data, err = json.Marshal(body); err != nil {
			return err
		}
	}
	err := r.c.do(ctx, method, path, data, out)
	var ae *apiError
	if errors.As(err, &ae) && ae.Status == http.StatusUnauthorized {
		return fmt.Errorf("spine refused the runner token (%s): %w", ae.Message, errLoginAgain)
	}
	return err
}

// register declares the machine, the apps the config allows and the work
// kind it takes. A spine that does not answer (down, restarting: no
// answer or a 502/503/504 after client.do's own retries) is asked again,
// with backoff up to registerBackoff, until it answers or ctx is done,
// saying so once: a runner started at login, or restarted by its service
// manager, waits for spine rather than exiting.
func (r *runner) register(ctx context.Context) error {
	backoff := time.Second
	for told := false; ; told = true {
		err := r.registerOnce(ctx)
		if err == nil || ctx.Err() != nil || !transientErr(err) {
			return err
		}
		if !told {
			r.out.say("runner", fmt.Sprintf("spine runner: spine at %s does not answer (%v): registering again until it does", r.creds.URL, err), nil)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, registerBackoff)
	}
}

// registerBackoff is the longest wait between two registrations spine did
// not answer.
var registerBackoff = time.Minute

func (r *runner) registerOnce(ctx context.Context) error {
	inv := desktop.Inventory{Machine: r.creds.Machine, Apps: r.consent.appNames(),
		Capabilities: []string{desktop.KindRemoteSession}, ProtocolVersion: desktop.ProtocolVersion,
		ExecutionTargets: []string{desktop.TargetDesktop}}
	var reg desktop.Registration
	if err := r.call(ctx, http.MethodPost, "/v1/desktop-runner/register", inv, &reg); err != nil {
		return fmt.Errorf("register: %w", err)
	}
	r.beat = cmp.Or(time.Duration(reg.HeartbeatSeconds)*time.Second, desktop.HeartbeatInterval)
	r.lease = cmp.Or(time.Duration(reg.LeaseSeconds)*time.Second, desktop.LeaseTTL)
	if r.beat >= r.lease {
		return fmt.Errorf("register: spine asks a heartbeat every %s for a lease of %s: no lease would be kept", r.beat, r.lease)
	}
	if reg.ProtocolVersion != 0 && reg.ProtocolVersion != desktop.ProtocolVersion {
		r.out.say("runner", fmt.Sprintf("spine runner: spine speaks runner protocol %d, this spine runner %d: update the older", reg.ProtocolVersion,
			desktop.ProtocolVersion), nil)
	}
	r.out.say("runner", fmt.Sprintf("runner %s (%s) ready at %s for %s", r.creds.RunnerID, r.creds.Machine, r.creds.URL,
		strings.Join(inv.Apps, ", ")), nil)
	return nil
}

// drain runs every task queued for this runner now, one after another,
// until none is left.
func (r *runner) drain(ctx context.Context) error {
	tried := map[string]bool{}
	for ctx.Err() == nil {
		var work struct {
			Tasks []desktop.Task `json:"tasks"`
		}
		if err := r.call(ctx, http.MethodGet, "/v1/desktop-runner/work", nil, &work); err != nil {
			return fmt.Errorf("list work: %w", err)
		}
		n := 0
		for _, t := range work.Tasks {
			if tried[t.ID] {
				continue
			}
			tried[t.ID] = true
			n++
			if err := r.take(ctx, t.ID); err != nil {
				return err
			}
		}
		if n == 0 {
			return nil
		}
	}
	return nil
}

// How often the runner lists its work without the event stream, and with
// it (a safety net for an announcement lost in a reconnect).
var (
	pollEvery      = 2 * time.Second
	pollEveryTuned = time.Minute
)

// serve takes work until ctx is done: the event stream wakes it the
// moment work is queued; while the stream is down it polls. The stream's
// goroutine ends before serve returns.
func (r *runner) serve(ctx context.Context) error {
	lctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	wake := make(chan struct{}, 1)
	var up atomic.Bool
	fatal := make(chan error, 1)
	wg.Add(1)
	go func() {
		defer wg.Done()
		fatal <- r.listen(lctx, wake, &up)
	}()
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case err := <-fatal:
			if ctx.Err() != nil {
				return nil
			}
			return err
		case <-wake:
		case <-timer.C:
		}
		if err := r.drain(ctx); err != nil {
			if ctx.Err() != nil {
				return nil // stopped while asking for work, as at any other moment
			}
			if errors.Is(err, errLoginAgain) {
				return err
			}
			r.out.say("runner", "spine runner: "+err.Error(), nil)
		}
		timer.Reset(map[bool]time.Duration{true: pollEveryTuned, false: pollEvery}[up.Load()])
	}
}

// listen keeps the event stream open, waking the work loop on each event
// and each time the stream goes up or down (up says which: the loop polls
// the slower while it is up). It returns only for a token spine no longer
// takes (or ctx done).
func (r *runner) listen(ctx context.Context, wake chan<- struct{}, up *atomic.Bool) error {
	stream := &http.Client{Transport: r.c.http.Transport} // no timeout: the stream is long
	backoff := time.Second
	for ctx.Err() == nil {
		err := r.stream(ctx, stream, wake, up)
		if errors.Is(err, errLoginAgain) {
			return err
		}
		if up.Swap(false) {
			nudge(wake)
		}
		if ctx.Err() != nil {
			return nil
		}
		r.out.say("runner", fmt.Sprintf("spine runner: event stream: %v; polling every %s, reconnecting in %s", err, pollEvery, backoff), nil)
		select {
		case <-ctx.Done():
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, time.Minute)
	}
	return nil
}

// nudge wakes the work loop, unless a wake is already waiting.
func nudge(wake chan<- struct{}) {
	select {
	case wake <- struct{}{}:
	default:
	}
}

// stream reads one connection of the event stream to its end.
func (r *runner) stream(ctx context.Context, hc *http.Client, wake chan<- struct{}, up *atomic.Bool) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, r.c.base+"/v1/desktop-runner/events", nil)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+r.c.token)
	req.Header.Set("Accept", "text/event-stream")
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusUnauthorized {
		return fmt.Errorf("spine refused the runner token: %w", errLoginAgain)
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("status %s", resp.Status)
	}
	up.Store(true) // the loop's next wait is the slower poll
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	var event string
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event:"):
			event = strings.TrimSpace(strings.TrimPrefix(line, "event:"))
		case line == "" && event != "":
			if event == "unauthorized" {
				return fmt.Errorf("spine ended the event stream: the runner token is no longer valid: %w", errLoginAgain)
			}
			nudge(wake) // ready, work_available: the work list says what
			event = ""
		}
	}
	if err := sc.Err(); err != nil {
		return err
	}
	return errors.New("spine closed it")
}
