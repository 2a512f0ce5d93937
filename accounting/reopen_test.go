package accounting_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/spinehq/spine/accounting"
	"github.com/spinehq/spine/internal/checksum"
	"github.com/spinehq/spine/internal/pgtest"
	"github.com/spinehq/spine/internal/spinetest"
	"github.com/spinehq/spine/recorder"
	"github.com/spinehq/spine/streams"
)

// A telemetry session that had ended (by the telemetry idle time, by its
// telemetry's end) and then gets a start from another door (spine collect)
// is one session, as the recorder has it: it runs again for the door, and
// its one router-call row is the door's end — column for column the row of
// a session only that door told, disconnects included — with cost_days
// the aggregate of router_calls and the call counted once. Telemetry after
// the start no longer changes the row. The same log projected in batches
// of any size gives the same projections, a reopened session the door
// never ended included (its row stays its telemetry's as of the start).
func TestStartReopensAnEndedTelemetrySession(t *testing.T) {
	f := newFixture(t)
	f.StartRecorder(nil)
	telemetry := []string{"idle", "ended", "gone", "open"}
	for _, s := range telemetry {
		f.publish(spinetest.Request(s, 1000, "req_1", "claude-haiku-4-5", usage(10, 20, 0, 0), ptr(0.25)),
			spinetest.Request(s, 2000, "req_2", "claude-haiku-4-5", usage(1, 2, 0, 0), ptr(0.5)))
		if s != "idle" {
			f.publish(telemetryEnd(s, 3000))
		}
	}
	f.sweepQuietTelemetry(1)
	if n := f.count(`SELECT count(*) FROM router_calls`); n != 4 {
		t.Fatalf("%d telemetry rows before the doors' starts, want 4", n)
	}

	collect := func(s, worker string) *streams.Envelope {
		e := spinetest.Start(s)
		e.ID, e.At, e.Kind, e.AppSessionRef, e.WorkerID, e.PlanID = s+"-collect", spinetest.T0.Add(time.Hour), "attach",
			"ref-"+s, worker, "plan-1"
		return e
	}
	end := func(s string) *streams.Envelope {
		e := spinetest.End(s, "failed", "claude-opus-4-8", "high")
		e.At, e.Usage, e.TotalCost, e.Billing = spinetest.T0.Add(2*time.Hour), usage(100, 200, 30, 0), ptr(1.5), "metered"
		return e
	}
	for _, s := range []string{"idle", "ended", "door", "gone", "door-gone", "open"} {
		worker := "laptop"
		if s == "gone" || s == "door-gone" {
			worker = "laptop-2"
		}
		f.publish(collect(s, worker))
		f.Publish(spinetest.Text(s, 1, "working\n"), spinetest.Command(s, 2, "make"))
		// Telemetry after the start: ledgered, not counted.
		f.publish(spinetest.Request(s, 4000, "req_3", "claude-sonnet-5", usage(5, 5, 0, 0), ptr(4.0)))
	}
	disconnect := spinetest.Disconnect("laptop-2", "gone")
	disconnect.At = spinetest.T0.Add(2 * time.Hour)
	f.publish(end("idle"), end("ended"), end("door"), disconnect)
	f.caughtUp()
	f.publish(spinetest.Request("ended", 5000, "req_4", "claude-sonnet-5", usage(7, 7, 0, 0), ptr(8.0)))
	f.caughtUp()

	for s, like := range map[string]string{"idle": "door", "ended": "door", "gone": "door-gone"} {
		if have, want := f.rowExceptSession(s), f.rowExceptSession(like); have != want {
			t.Errorf("%s's row is not its door's end's:\nhave %s\nwant %s", s, have, want)
		}
	}
	if r := f.telemetryRow("open"); r.Status != "done" || *r.Input != 11 || *r.Cost != "0.75" || r.Model != "claude-haiku-4-5" {
		t.Errorf("open (reopened, not ended): %+v, want its telemetry's row as of the start", r)
	}
	// The recorder's session and accounting's agree: the door's, once.
	if n := f.count(`SELECT count(*) FROM sessions s JOIN accounting_sessions a ON a.session_id = s.id
		WHERE s.origin = '' AND a.origin = '' AND s.started_at = a.started_at AND s.ended_at IS NOT DISTINCT FROM a.ended_at
			AND a.reopened = (s.id IN ('idle', 'ended', 'gone', 'open'))`); n != 6 {
		t.Errorf("%d of 6 sessions agree", n)
	}
	if n := f.count(`SELECT count(*) FROM sessions s JOIN router_calls r ON r.session_id = s.id
		WHERE s.status = r.status AND s.started_at = r.started_at AND s.ended_at = r.at`); n != 5 {
		t.Errorf("%d of 5 ended sessions' rows agree with the recorder's", n)
	}
	f.countedAndRebuilt(6)
}

// A telemetry session the idle sweeper ended was only quiet (its user
// away, a long command): its telemetry other than a request runs it again,
// in the recorder (a tool's post is a step, status running) as in
// accounting (reopened), and its next end — its telemetry's, the
// sweeper's again, a disconnect, a door's — writes its one router-call row
// again, every request counted. A request alone is a late one: the row
// takes it, the session stays ended. Until the next end the row is as of
// the reopen, whatever batches the log is cut into.
func TestTelemetryAfterTheSweepRunsTheSessionAgain(t *testing.T) {
	f := newFixture(t)
	f.StartRecorder(nil)
	req := func(s string, n int64, id string) *streams.Envelope {
		return spinetest.Request(s, n, id, "claude-haiku-4-5", usage(n, 1, 0, 0), ptr(0.25))
	}
	tool := func(s string, n int64) *streams.Envelope {
		return spinetest.ToolUse(s, n, fmt.Sprintf("toolu_%d", n), streams.PhasePost)
	}
	prompt := spinetest.Telemetry("back", 3000, "prompt-1", &streams.Telemetry{Kind: streams.TelemetryPrompt,
		Source: streams.TelemetryHook, PromptDigest: "blake3:" + strings.Repeat("ab", 32)})
	gone := []string{"back", "still", "twice", "door", "billed", "gone"}
	for _, s := range gone {
		e := req(s, 1, "req_1")
		if s == "gone" {
			e.WorkerID = "laptop-9"
		}
		if s == "still" {
			e.Billing = "metered"
		}
		f.publish(e)
	}
	f.sweepQuietTelemetry(len(gone))
	f.agree(6)
	if n := f.count(`SELECT count(*) FROM accounting_sessions a JOIN sessions s ON s.id = a.session_id
		WHERE a.swept AND s.swept AND s.status = 'done'`); n != 6 {
		t.Fatalf("%d of 6 swept sessions are swept in both", n)
	}

	start := spinetest.Start("door")
	start.Kind, start.AppSessionRef = "attach", "ref-door"
	disconnect := spinetest.Disconnect("laptop-9", "gone")
	disconnect.At = spinetest.T0.Add(time.Hour)
	f.publish(req("back", 2, "req_2"), tool("back", 2000), req("back", 3, "req_3"), prompt, telemetryEnd("back", 4000),
		req("back", 4, "req_4"),
		tool("twice", 2000), req("twice", 2, "req_2"),
		tool("door", 2000), start,
		tool("gone", 2000), disconnect)
	f.Publish(spinetest.Text("door", 1, "working\n"), spinetest.Command("door", 2, "make"))
	f.caughtUp()
	f.sweepQuietTelemetry(1) // twice: its telemetry stopped again
	billed := req("billed", 2, "req_2")
	billed.Billing = "subscription"
	f.publish(tool("twice", 3000), req("twice", 3, "req_3"), tool("still", 2000), req("still", 2, "req_2"),
		tool("billed", 2000), billed, spinetest.End("door", "failed", "claude-opus-4-8", ""))
	f.caughtUp()

	for s, want := range map[string]string{"back": "done", "still": "running", "twice": "running", "door": "failed",
		"billed": "running", "gone": "disconnected"} {
		steps := map[bool]int{true: 2, false: 1}[s == "twice"] // the door's make replaced its telemetry's step
		if got := f.recorded(s); got.Status != want || got.RecordedSteps != steps {
			t.Errorf("%s: status %s, %d steps; want %s, %d", s, got.Status, got.RecordedSteps, want, steps)
		}
	}
	if s := f.recorded("back"); s.Model != "claude-haiku-4-5" || s.PromptDigest != prompt.Telemetry.PromptDigest ||
		s.TotalCost == nil || *s.TotalCost != 1 {
		t.Errorf("back: %+v, want its prompt and its four requests", s)
	}
	for s, want := range map[string][4]string{"back": {"done", "10", "1.00", "unknown"},
		"still": {"done", "1", "0.25", "metered"}, "twice": {"done", "3", "0.50", "unknown"},
		"billed": {"done", "1", "0.25", "unknown"}, "gone": {"disconnected", "1", "0.25", "unknown"}} {
		if r := f.telemetryRow(s); r.Status != want[0] || fmt.Sprint(*r.Input) != want[1] || *r.Cost != want[2] ||
			r.Billing != want[3] {
			t.Errorf("%s: row %+v, want %s with input %s, cost %s, billing %s", s, r, want[0], want[1], want[2], want[3])
		}
	}
	if s := f.recorded("still"); s.Billing != "metered" {
		t.Errorf("still: billing %q after the sweeper's end, want its telemetry's, metered", s.Billing)
	}
	if r := f.telemetryRow("door"); r.Status != "failed" || r.Input != nil || r.Door != "session" {
		t.Errorf("door: row %+v, want its door's end's", r)
	}
	if n := f.count(`SELECT count(*) FROM router_calls r JOIN sessions s ON s.id = r.session_id
		WHERE s.ended_at = r.at AND s.status = r.status`); n != 3 {
		t.Errorf("%d of the 3 ended sessions' rows are their ends'", n)
	}
	f.agree(6)
	f.countedAndRebuilt(6)
}

// agree fails the test unless the recorder's sessions and accounting's
// agree, n of them: ended at the same time or running, reopened by the
// same, swept the same.
func (f *fixture) agree(n int) {
	f.T.Helper()
	if got := f.count(`SELECT count(*) FROM sessions s JOIN accounting_sessions a ON a.session_id = s.id
		WHERE s.origin = a.origin AND s.ended_at IS NOT DISTINCT FROM a.ended_at AND s.swept = a.swept
			AND (s.status = 'running') = (a.ended_at IS NULL)`); got != n {
		f.T.Fatalf("%d of %d sessions agree", got, n)
	}
}

// recorded is the recorder's session.
func (f *fixture) recorded(id string) *recorder.Session {
	f.T.Helper()
	s, err := recorder.GetSession(ctx, f.Pool, streams.Owner{Org: "acme", Member: "alice"}, id)
	if err != nil {
		f.T.Fatalf("session %s: %v", id, err)
	}
	return s
}

// sweepQuietTelemetry waits for both projectors, then ends every running
// telemetry session as the sweeper does once its telemetry idle time has
// passed (the sweeper's clock an hour on), want of them, and waits for
// those ends.
func (f *fixture) sweepQuietTelemetry(want int) {
	f.T.Helper()
	f.caughtUp()
	w, err := recorder.NewSweeper(recorder.SweeperConfig{Pool: f.Pool, Publisher: f.Pub,
		Now: func() time.Time { return time.Now().Add(time.Hour) }})
	if err != nil {
		f.T.Fatal(err)
	}
	if n, err := w.Sweep(ctx); err != nil || n != want {
		f.T.Fatalf("swept %d sessions (%v), want %d", n, err, want)
	}
	f.saw(f.LastSeq())
	f.caughtUp()
}

// caughtUp waits until the recorder and accounting have committed
// everything published.
func (f *fixture) caughtUp() {
	f.T.Helper()
	f.WaitCaughtUp()
	f.wait()
}

// rowExceptSession is a session's router-call row as JSON, without its id.
func (f *fixture) rowExceptSession(session string) string {
	f.T.Helper()
	var row string
	if err := f.Pool.QueryRow(ctx, `SELECT (to_jsonb(r) - 'session_id')::text FROM router_calls r WHERE session_id = $1`,
		session).Scan(&row); err != nil {
		f.T.Fatalf("router call of %s: %v", session, err)
	}
	return row
}

// projectInto projects the whole log again into a new database, the
// recorder and accounting in batches of size, and returns its checksums.
// The live projectors are stopped first: the new ones take their durable
// consumers.
func (f *fixture) projectInto(size int) map[string]string {
	f.T.Helper()
	f.Projector.Stop()
	f.p.Stop()
	pool, _ := pgtest.New(f.T)
	rec := f.StartRecorder(&spinetest.RecorderOpts{Pool: pool, BatchSize: size})
	defer rec.Stop()
	commits := make(chan struct{}, 1)
	p, err := streams.NewProjector(streams.ProjectorConfig{Name: accounting.ProjectorName, Stream: streams.StreamSessions,
		Filter: accounting.Subjects(), Handler: accounting.New(accounting.Config{}), Pool: pool, JS: f.JS,
		BatchSize: size, MaxWait: 20 * time.Millisecond, Logger: spinetest.Logger(f.T),
		OnCommit: func(uint64, []streams.Message) {
			select {
			case commits <- struct{}{}:
			default:
			}
		}})
	if err != nil {
		f.T.Fatal(err)
	}
	if err := p.Start(ctx); err != nil {
		f.T.Fatal(err)
	}
	defer p.Stop()
	f.WaitCaughtUp()
	deadline := time.After(spinetest.WaitTimeout)
	for p.Checkpoint() < f.p.Checkpoint() {
		select {
		case <-commits:
		case <-deadline:
			f.T.Fatalf("accounting at %d, want %d", p.Checkpoint(), f.p.Checkpoint())
		}
	}
	sums, err := checksum.Projections(ctx, pool)
	if err != nil {
		f.T.Fatal(err)
	}
	return sums
}

// countedAndRebuilt checks what every reopen test ends on: cost_days a
// fresh aggregate, calls counted once per session, and the log projected
// again in batches of 1, 3 and 500 equal to the live projections.
func (f *fixture) countedAndRebuilt(calls float64) {
	f.T.Helper()
	f.rollupIsFresh()
	if got := f.metric("spine_accounting_calls_total", nil); got != calls {
		f.T.Errorf("%v calls counted, want %v", got, calls)
	}
	live, err := checksum.Projections(ctx, f.Pool)
	if err != nil {
		f.T.Fatal(err)
	}
	for _, size := range []int{1, 3, 500} {
		for _, tbl := range checksum.Diff(live, f.projectInto(size)) {
			f.T.Errorf("batches of %d: %s differs from the live projection", size, tbl)
		}
	}
}
