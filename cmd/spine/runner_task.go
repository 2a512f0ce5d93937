package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os/exec"
	"sync"
	"time"

	"github.com/spinehq/spine/desktop"
	"github.com/spinehq/spine/streams"
)

// Why a task's app was stopped before it ended on its own.
var (
	errCancelRequested = errors.New("the remote session was cancelled")
	errLeaseLost       = errors.New("the runner lost the task's lease")
)

// heartbeatEvery, when set, is how often a held task is heartbeated
// instead of what spine's registration answer says (tests shorten it).
var heartbeatEvery time.Duration

// finishGrace bounds the last posts of a task (its last events and the
// complete) once the runner itself is told to stop.
const finishGrace = 15 * time.Second

// take claims a task and runs it; losing the claim race is no error. Only
// a token spine no longer takes is returned: the runner cannot go on.
func (r *runner) take(ctx context.Context, id string) error {
	var cl desktop.Claim
	err := r.call(ctx, http.MethodPost, "/v1/desktop-runner/tasks/"+url.PathEscape(id)+"/claim", struct{}{}, &cl)
	var ae *apiError
	switch {
	case errors.Is(err, errLoginAgain):
		return err
	case errors.As(err, &ae) && ae.Status == http.StatusConflict:
		return nil // another runner won it, or it is no longer queued
	case err != nil:
		r.out.say("runner", fmt.Sprintf("spine runner: claim %s: %v", id, err), nil)
		return nil
	case cl.Task == nil:
		r.out.say("runner", fmt.Sprintf("spine runner: claim %s: spine's answer holds no task", id), nil)
		return nil
	}
	h := &heldTask{r: r, task: *cl.Task, fence: cl.Fence}
	return h.run(ctx)
}

// heldTask is a task this runner holds the claim of, while it runs.
type heldTask struct {
	r     *runner
	task  desktop.Task // as claimed
	fence uint64
	ev    *eventPoster
}

// run decides the task under the runner's consent, asks the owner with
// --confirm, runs it and completes it with the receipt. From the claim's
// consent check on, one heartbeat loop holds the task for the whole of it:
// the owner's answer as much as the app's run.
func (h *heldTask) run(ctx context.Context) error {
	t := &h.task
	line := fmt.Sprintf("▶ task %s (remote session %s)", t.ID, t.RemoteSessionID)
	if h.r.out.live {
		line += ": " + firstLine(t.Instructions) // a prompt: only on a terminal
	}
	h.r.out.say("task", line, map[string]any{"taskId": t.ID, "remoteSessionId": t.RemoteSessionID, "resume": t.LocalSessionID})
	spec, app, status, msg := h.prepare()
	if status != "" {
		return h.complete(ctx, status, msg)
	}
	hctx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	beat := make(chan struct{})
	go func() {
		defer close(beat)
		h.heartbeat(hctx, stop)
	}()
	halt := func() error { // stops the heartbeats; why the task's context ended, if it did
		stop(nil)
		<-beat
		return context.Cause(hctx)
	}
	if h.r.confirm {
		yes := h.r.ask(hctx, fmt.Sprintf("%s\nRun it with %s in %s? [y/N] ", t.Instructions, app, spec.Dir))
		if hctx.Err() != nil {
			return h.interrupted(ctx, halt())
		}
		if !yes {
			halt()
			return h.complete(ctx, "refused", "declined by the owner")
		}
	}
	return h.runApp(ctx, hctx, stop, halt, spec)
}

// prepare is the task's run as the consent allows it, or how the task
// ends without one (status "refused" or "failed", with why).
func (h *heldTask) prepare() (spec runSpec, app, status, msg string) {
	t := &h.task
	app, dir, err := h.r.consent.allow(t)
	var ref *refusal
	if errors.As(err, &ref) {
		return spec, "", "refused", ref.reason
	}
	if err != nil {
		return spec, "", "failed", "no_workspace: " + err.Error()
	}
	a := h.r.consent.Apps[app]
	argv, format, err := a.appCommand(app, t.Instructions, t.LocalSessionID)
	if errors.As(err, &ref) {
		return spec, "", "refused", ref.reason
	}
	if err != nil {
		return spec, "", "failed", err.Error()
	}
	bin := a.Bin
	if bin == "" {
		name := appBinary[app]
		if bin, err = exec.LookPath(name); err != nil {
			return spec, "", "failed", "app_not_found: " + name + " is not on this desktop's PATH: set its bin in the runner config"
		}
	}
	return runSpec{Bin: bin, Argv: argv, Format: format, API: h.r.c, Dir: dir, NoStdin: true,
		SpoolDir: h.r.spool, Leftovers: true}, app, "", ""
}

// interrupted ends a task stopped before its app ran (while the owner was
// asked): a lost lease leaves it (it is no longer this runner's), a cancel
// or the runner stopping completes it cancelled.
func (h *heldTask) interrupted(ctx context.Context, why error) error {
	if errors.Is(why, errLeaseLost) {
		h.r.out.say("task", fmt.Sprintf("■ task %s: %v: spine no longer holds it for this runner", h.task.ID, why), nil)
		return nil
	}
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), finishGrace)
	defer cancel()
	status, msg := taskEnd(runResult{}, nil, why, ctx.Err() != nil, h.r.creds.Machine)
	if errors.Is(why, errCancelRequested) {
		msg = "cancelled before it ran (the owner was asked)"
	}
	return h.complete(fctx, status, msg)
}

// runApp runs the app through spine run's machinery with the task's
// context (hctx: the heartbeats, or an event post, stop it through stop),
// posting events beside it, and completes the task as the app ended.
func (h *heldTask) runApp(ctx, hctx context.Context, stop context.CancelCauseFunc, halt func() error, spec runSpec) error {
	fin := context.WithoutCancel(ctx)
	h.ev = newEventPoster(h, stop)
	spec.Show, spec.Stamp = h.show(), h.stamp
	res, err := runApp(hctx, spec)
	why := halt()
	if errors.Is(why, errLeaseLost) {
		gone, cancel := context.WithCancel(fin)
		cancel()
		h.ev.close(gone) // what is left is no longer this runner's to post
		h.r.out.say("task", fmt.Sprintf("■ task %s: %v: the app was stopped; spine no longer holds it for this runner", h.task.ID, why), nil)
		return nil
	}
	if err == nil && !res.Recorded {
		h.r.out.say("task", fmt.Sprintf("  the session of task %s is not fully recorded in spine: %d envelopes not taken, %d refused",
			h.task.ID, res.Lost, res.Refused), nil)
	}
	fctx, cancel := context.WithTimeout(fin, finishGrace)
	defer cancel()
	status, msg := taskEnd(res, err, why, ctx.Err() != nil, h.r.creds.Machine)
	h.ev.add(desktop.RunnerEvent{Type: desktop.EventTerminal, Status: status, Error: msg})
	h.ev.close(fctx)
	return h.complete(fctx, status, msg)
}

// taskEnd is how a task ends after its app: done, cancelled (asked for,
// or the runner stopped) or failed (the app could not start, or failed).
func taskEnd(res runResult, err, why error, stopped bool, machine string) (status, msg string) {
	switch {
	case errors.Is(why, errCancelRequested):
		return desktop.StateCancelled, "cancelled: the app was stopped"
	case stopped:
		return desktop.StateCancelled, "spine runner on " + machine + " was stopped"
	case err != nil:
		return "failed", "app_failed: the app could not start: " + err.Error()
	case res.Status == "done":
		return desktop.StateDone, ""
	case res.Status == "cancelled":
		return desktop.StateCancelled, fmt.Sprintf("the app was stopped (exit %d)", res.Code)
	}
	return "failed", fmt.Sprintf("app_failed: the app ended %s with exit code %d", cmp.Or(res.Status, "failed"), res.Code)
}

// stamp links the recorded session to its task and machine.
func (h *heldTask) stamp(e *streams.Envelope) {
	if e.Type == streams.TypeSessionStart {
		e.TaskID, e.WorkerID = h.task.ID, h.r.creds.RunnerID // spine sets the workerId to the runner's id in any case
	}
}

// show renders the run on the terminal and turns it into the task's
// events: the app's own session id, each action as a status, and its usage
// at the end. The app's prose is not posted (assistant_text): the session
// the runner records for the task carries it, and remoteSession.read reads
// it there (docs/desktop.md#reading); posted too, it was read twice when
// the post came before spine took the session's start.
func (h *heldTask) show() func(*streams.Envelope) {
	render := h.r.out.envelopes()
	named := false
	return func(e *streams.Envelope) {
		render(e)
		switch e.Type {
		case streams.TypeSessionStart:
			if !named && e.AppSessionRef != "" {
				named = true
				h.ev.add(desktop.RunnerEvent{Type: desktop.EventSessionID, SessionID: e.AppSessionRef})
			}
		case streams.TypeSessionChunk:
			if e.Event != nil {
				h.ev.add(desktop.RunnerEvent{Type: desktop.EventStatus, Status: desktop.StateRunning, Text: describe(e.Event)})
			}
		case streams.TypeSessionEnd:
			if e.Usage != nil {
				u := *e.Usage
				u.Raw = nil
				raw, _ := json.Marshal(u)
				h.ev.add(desktop.RunnerEvent{Type: desktop.EventUsage, Usage: raw})
			}
		}
	}
}

// heartbeat keeps the lease, every heartbeat interval spine gave at
// registration, until ctx is done; a cancel asked for, or the lease lost (a
// stale claim, or no heartbeat taken before the lease ran out), stops the
// app through stop. The lease is judged by this machine's monotonic clock:
// it runs out the lease's length after the last heartbeat spine took was
// sent, whatever the two clocks say the time is.
func (h *heldTask) heartbeat(ctx context.Context, stop context.CancelCauseFunc) {
	deadline := time.Now().Add(h.r.lease) // the claim's lease runs from the claim, just before
	tick := time.NewTicker(cmp.Or(heartbeatEvery, h.r.beat))
	defer tick.Stop()
	for first := true; ; first = false {
		if !first { // the first at once: it moves the task from claimed to running
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
		sent := time.Now()
		var lease desktop.Lease
		// No wait for a busy spine past the lease: the client returns its 429
		// rather than sleep beyond the call's deadline.
		cctx, cancel := context.WithDeadline(ctx, deadline)
		err := h.r.call(cctx, http.MethodPost, h.path("heartbeat"), map[string]any{"fence": h.fence}, &lease)
		cancel()
		switch {
		case ctx.Err() != nil:
			return
		case err == nil:
			deadline = sent.Add(h.r.lease)
			h.lease(lease, stop)
		case isStale(err):
			stop(errLeaseLost)
		case time.Now().After(deadline):
			stop(fmt.Errorf("%w: no heartbeat taken for %s (%v)", errLeaseLost, h.r.lease, err))
		}
	}
}

// lease acts on a heartbeat's (or an event post's) answer.
func (h *heldTask) lease(l desktop.Lease, stop context.CancelCauseFunc) {
	switch {
	case !l.LeaseValid:
		stop(errLeaseLost)
	case l.CancelRequested:
		stop(errCancelRequested)
	}
}

func isStale(err error) bool {
	var ae *apiError
	return errors.As(err, &ae) && ae.Status == http.StatusConflict && ae.Code == "stale_claim"
}

// isRefused is an answer that would be the same if asked again (a 4xx
// other than a 429, which the client retries itself).
func isRefused(err error) bool {
	var ae *apiError
	return errors.As(err, &ae) && ae.Status >= 400 && ae.Status < 500
}

func (h *heldTask) path(op string) string {
	return "/v1/desktop-runner/tasks/" + url.PathEscape(h.task.ID) + "/" + op
}

// complete ends the task with status (done, cancelled, refused, failed)
// and says so with the receipt.
func (h *heldTask) complete(ctx context.Context, status, msg string) error {
	var rec desktop.Receipt
	err := h.r.call(ctx, http.MethodPost, h.path("complete"), map[string]any{"fence": h.fence, "status": status, "error": msg}, &rec)
	if errors.Is(err, errLoginAgain) {
		return err
	}
	if err != nil {
		h.r.out.say("task", fmt.Sprintf("■ task %s: complete %s: %v", h.task.ID, status, err), nil)
		return nil
	}
	line := fmt.Sprintf("■ task %s %s (receipt %s)", h.task.ID, rec.State, rec.ReceiptID)
	if msg != "" {
		line += ": " + msg
	}
	h.r.out.say("task", line, map[string]any{"taskId": h.task.ID, "status": status, "state": rec.State, "receiptId": rec.ReceiptID, "error": msg})
	return nil
}

// eventPoster posts a task's events in order from a goroutine of its own,
// so the app's output is never held up by spine: each post carries what
// gathered since the last (at most desktop.MaxEventsPerPost). A failed
// post is tried again; a stale claim stops the app.
type eventPoster struct {
	h       *heldTask
	stop    context.CancelCauseFunc
	mu      sync.Mutex
	pending []desktop.RunnerEvent
	seq     int64
	more    chan struct{}
	done    chan struct{}
	closing chan struct{}
	fin     context.Context
}

func newEventPoster(h *heldTask, stop context.CancelCauseFunc) *eventPoster {
	p := &eventPoster{h: h, stop: stop, more: make(chan struct{}, 1), done: make(chan struct{}), closing: make(chan struct{})}
	go p.loop()
	return p
}

// add queues one event, numbering it.
func (p *eventPoster) add(e desktop.RunnerEvent) {
	p.mu.Lock()
	p.seq++
	e.Seq = p.seq
	p.pending = append(p.pending, e)
	p.mu.Unlock()
	select {
	case p.more <- struct{}{}:
	default:
	}
}

// close posts what is left, within ctx, and stops the poster.
func (p *eventPoster) close(ctx context.Context) {
	p.fin = ctx
	close(p.closing)
	<-p.done
}

func (p *eventPoster) loop() {
	defer close(p.done)
	ctx := context.Background()
	for {
		select {
		case <-p.more:
		case <-p.closing:
			p.flush(p.fin, true)
			return
		}
		p.flush(ctx, false)
	}
}

// flush posts the pending events; with last it tries until ctx is done,
// otherwise it leaves a failure for the next round (after a pause).
func (p *eventPoster) flush(ctx context.Context, last bool) {
	for {
		p.mu.Lock()
		batch := p.pending[:min(len(p.pending), desktop.MaxEventsPerPost)]
		p.mu.Unlock()
		if len(batch) == 0 {
			return
		}
		var rec desktop.EventsReceipt
		err := p.h.r.call(ctx, http.MethodPost, p.h.path("events"), map[string]any{"fence": p.h.fence, "events": batch}, &rec)
		switch {
		case err == nil:
			p.mu.Lock()
			p.pending = p.pending[len(batch):]
			p.mu.Unlock()
			p.h.lease(rec.Lease, p.stop)
			continue
		case isStale(err):
			p.stop(errLeaseLost)
			return
		case isRefused(err):
			p.h.r.out.say("runner", fmt.Sprintf("spine runner: spine refused %d events of %s: %v (dropped)", len(batch), p.h.task.ID, err), nil)
			p.mu.Lock()
			p.pending = p.pending[len(batch):]
			p.mu.Unlock()
			continue
		case !last:
			p.h.r.out.say("runner", fmt.Sprintf("spine runner: post events of %s: %v (tried again)", p.h.task.ID, err), nil)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Second):
		}
		if !last {
			select {
			case p.more <- struct{}{}:
			default:
			}
			return
		}
	}
}
