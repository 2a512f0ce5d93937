package recorder_test

import (
	"testing"
	"time"

	"github.com/spinehq/spine/internal/pgtest"
	"github.com/spinehq/spine/internal/spinetest"
	"github.com/spinehq/spine/recorder"
	"github.com/spinehq/spine/streams"
)

const (
	idle  = time.Hour
	grace = time.Minute
)

// clock is a sweeper's time, set by the test.
type clock struct{ now time.Time }

func (c *clock) Now() time.Time { return c.now }

func sweeper(t *testing.T, h *spinetest.Harness, c *clock) *recorder.Sweeper {
	t.Helper()
	return pagedSweeper(t, h, c, 0)
}

func pagedSweeper(t *testing.T, h *spinetest.Harness, c *clock, page int) *recorder.Sweeper {
	t.Helper()
	w, err := recorder.NewSweeper(recorder.SweeperConfig{Pool: h.Pool, Publisher: h.Pub, IdleTimeout: idle,
		CancelGrace: grace, BatchSize: page, Now: c.Now, Logger: spinetest.Logger(t)})
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// sweep runs one pass at the given time and waits for the recorder to
// apply what it published.
func sweep(t *testing.T, h *spinetest.Harness, w *recorder.Sweeper, c *clock, at time.Time) int {
	t.Helper()
	c.now = at
	n, err := w.Sweep(ctx)
	if err != nil {
		t.Fatalf("sweep: %v", err)
	}
	h.WaitCaughtUp()
	return n
}

// sweepTimes are the log times the sweeper decides by.
func sweepTimes(t *testing.T, h *spinetest.Harness, id string) (received, cancelled *time.Time) {
	t.Helper()
	if err := h.Pool.QueryRow(ctx, `SELECT received_at, cancel_requested_at FROM sessions WHERE id = $1`, id).
		Scan(&received, &cancelled); err != nil {
		t.Fatal(err)
	}
	return received, cancelled
}

// A session that goes quiet ends timeout/idle_timeout, its transcript
// written, once JetStream stored nothing for it for the idle timeout; the
// producer's at (a month old here, as in imported history) does not count.
// A chunk that arrives after that is dead-lettered session_ended.
func TestIdleTimeoutEndsQuietSession(t *testing.T) {
	h := running(t)
	c := &clock{}
	w := sweeper(t, h, c)
	h.Publish(spinetest.Start("q1"), spinetest.Text("q1", 1, "working\n"))
	h.WaitCaughtUp()
	first, _ := sweepTimes(t, h, "q1")
	h.Publish(spinetest.Command("q1", 2, "make"))
	h.WaitCaughtUp()
	last, _ := sweepTimes(t, h, "q1")
	if first == nil || last == nil || !last.After(*first) {
		t.Fatalf("received_at: %v then %v, want the stored time of each envelope", first, last)
	}

	if n := sweep(t, h, w, c, time.Now()); n != 0 || session(t, h, "q1").Ended() {
		t.Fatalf("swept %d sessions whose producer time is old but which spine just received", n)
	}
	if n := sweep(t, h, w, c, last.Add(idle-time.Microsecond)); n != 0 {
		t.Fatalf("swept %d before the idle timeout", n)
	}
	end := last.Add(idle + time.Microsecond)
	if n := sweep(t, h, w, c, end); n != 1 {
		t.Fatalf("swept %d at the idle timeout, want 1", n)
	}
	s := session(t, h, "q1")
	if s.Status != "timeout" || s.Error != recorder.ErrorIdleTimeout || s.TranscriptFileID == "" ||
		s.EndedAt == nil || !s.EndedAt.Equal(end.Truncate(time.Microsecond)) || s.RecordedSteps != 1 {
		t.Fatalf("timed-out session = %+v", s)
	}
	if r, cr := sweepTimes(t, h, "q1"); r != nil || cr != nil {
		t.Fatalf("an ended session keeps sweep times %v, %v", r, cr)
	}
	if n := sweep(t, h, w, c, end.Add(idle)); n != 0 {
		t.Fatalf("swept an ended session again: %d", n)
	}

	h.Publish(spinetest.Text("q1", 3, "still here?\n"))
	h.WaitCaughtUp()
	dl := deadLetters(t, h)
	if len(dl) != 1 || dl[0].Reason != streams.ReasonSessionEnded || dl[0].Subject != "spine.session.q1.chunk" {
		t.Fatalf("dead letters = %+v, want the late chunk as session_ended", dl)
	}
}

// A cancel starts the grace at the time JetStream stored the first one; a
// session still running when it is over ends cancelled. One whose producer
// ended it in time keeps the producer's end.
func TestCancelGraceEndsCancelled(t *testing.T) {
	h := running(t)
	c := &clock{}
	w := sweeper(t, h, c)
	h.Publish(spinetest.Start("k1"), spinetest.Start("k2"), recorder.CancelControl("k1", "user asked", time.Now()),
		recorder.CancelControl("k2", "", time.Now()))
	h.WaitCaughtUp()
	_, asked := sweepTimes(t, h, "k1")
	if asked == nil {
		t.Fatal("cancel_requested_at not set by the cancel")
	}
	again := recorder.CancelControl("k1", "again", time.Now())
	again.ID += "-again" // a second, distinct cancel: the grace still runs from the first
	producerEnd := spinetest.End("k2", "cancelled", "", "")
	producerEnd.Error = "stopped by the cockpit"
	h.Publish(again, producerEnd)
	h.WaitCaughtUp()
	if _, still := sweepTimes(t, h, "k1"); still == nil || !still.Equal(*asked) {
		t.Fatalf("second cancel moved the grace: %v, was %v", still, asked)
	}
	obs := count(t, h, `SELECT count(*) FROM observations WHERE run_id = $1 AND kind = 'control'
		AND body->>'control' = 'cancel'`, recorder.RunID("k1"))
	if obs != 2 {
		t.Fatalf("%d cancel observations on k1, want 2", obs)
	}

	if n := sweep(t, h, w, c, asked.Add(grace-time.Microsecond)); n != 0 {
		t.Fatalf("swept %d within the grace", n)
	}
	if n := sweep(t, h, w, c, asked.Add(grace+time.Microsecond)); n != 1 {
		t.Fatalf("swept %d after the grace, want 1", n)
	}
	if s := session(t, h, "k1"); s.Status != "cancelled" || s.Error != recorder.ErrorCancelGrace || s.TranscriptFileID == "" {
		t.Fatalf("k1 after the grace = %+v", s)
	}
	if s := session(t, h, "k2"); s.Status != "cancelled" || s.Error != "stopped by the cockpit" {
		t.Fatalf("k2 (ended by its producer) = %+v", s)
	}
	if dl := deadLetters(t, h); len(dl) != 0 {
		t.Fatalf("dead letters = %+v", dl)
	}
}

// Two nodes sweeping the same session publish one end: while one sweeps
// (holding the lock) the other does nothing, and the end's id is derived
// from the session's, so a second publish, even while the recorder has not
// yet applied the first, is a duplicate.
func TestSweepIsPublishedOnce(t *testing.T) {
	h := spinetest.New(t)
	p := h.StartRecorder(nil)
	c1, c2 := &clock{}, &clock{}
	w1, w2 := sweeper(t, h, c1), sweeper(t, h, c2)
	h.Publish(spinetest.Start("d1"))
	h.WaitCaughtUp()
	r, _ := sweepTimes(t, h, "d1")
	c1.now, c2.now = r.Add(2*idle), r.Add(2*idle)
	before := h.LastSeq()

	tx, err := h.Pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, recorder.SweepLockKey); err != nil {
		t.Fatal(err)
	}
	if n, err := w1.Sweep(ctx); err != nil || n != 0 || h.LastSeq() != before {
		t.Fatalf("swept %d (%v) while another node held the lock", n, err)
	}
	_ = tx.Rollback(ctx)

	p.Stop() // the recorder lags: both nodes still see d1 running
	if n, err := w1.Sweep(ctx); err != nil || n != 1 {
		t.Fatalf("first node swept %d, %v", n, err)
	}
	if n, err := w2.Sweep(ctx); err != nil || n != 0 {
		t.Fatalf("second node swept %d, %v: the end was stored twice", n, err)
	}
	if got := h.LastSeq() - before; got != 1 {
		t.Fatalf("%d messages stored for one due session", got)
	}
	h.StartRecorder(nil)
	h.WaitCaughtUp()
	if s := session(t, h, "d1"); s.Status != "timeout" {
		t.Fatalf("d1 = %+v", s)
	}
	if dl := deadLetters(t, h); len(dl) != 0 {
		t.Fatalf("dead letters = %+v", dl)
	}
}

// An end judged on a row the recorder had not yet brought up to date (a
// chunk stored before the sweep, projected after it) is dropped without a
// dead letter: the session is at work. Judged again on the chunk's time,
// it gets another id (not the first one's duplicate) and ends the session.
func TestSweptEndJudgedOnALaggingRowIsDropped(t *testing.T) {
	h := spinetest.New(t)
	p := h.StartRecorder(nil)
	c := &clock{}
	w := sweeper(t, h, c)
	h.Publish(spinetest.Start("l1"), spinetest.Text("l1", 1, "working\n"))
	h.WaitCaughtUp()
	judged, _ := sweepTimes(t, h, "l1")
	p.Stop() // the recorder lags behind the log
	h.Publish(spinetest.Text("l1", 2, "still working\n"))
	c.now = judged.Add(idle + time.Microsecond)
	if n, err := w.Sweep(ctx); err != nil || n != 1 {
		t.Fatalf("swept %d, %v: want the end judged on the lagging row", n, err)
	}
	h.StartRecorder(nil)
	h.WaitCaughtUp()
	if s := session(t, h, "l1"); s.Ended() || s.LastSeq != 2 {
		t.Fatalf("a session heard from before the sweep was ended: %+v", s)
	}
	if dl := deadLetters(t, h); len(dl) != 0 {
		t.Fatalf("dead letters = %+v, want none: nobody sent the dropped end", dl)
	}
	heard, _ := sweepTimes(t, h, "l1")
	if n := sweep(t, h, w, c, heard.Add(idle+time.Microsecond)); n != 1 {
		t.Fatalf("swept %d once quiet since the chunk, want 1", n)
	}
	if s := session(t, h, "l1"); s.Status != "timeout" || s.Error != recorder.ErrorIdleTimeout {
		t.Fatalf("l1 = %+v", s)
	}
}

// The same session ended twice is ended once, and its owner is shown no
// dead letter they never sent: a producer's end that lands before a
// lagging sweeper's, and a sweeper's end stored again after the log's
// duplicate window (another node, a restart), are silent.
func TestSweptEndOfAnEndedSessionIsSilent(t *testing.T) {
	h := spinetest.New(t)
	p := h.StartRecorder(nil)
	c := &clock{}
	w1, w2 := sweeper(t, h, c), sweeper(t, h, c)
	h.Publish(spinetest.Start("e1"), spinetest.Start("e2"))
	h.WaitCaughtUp()
	judged, _ := sweepTimes(t, h, "e2")
	p.Stop()
	h.Publish(spinetest.End("e1", "done", "", ""))
	c.now = judged.Add(2 * idle)
	if n, err := w1.Sweep(ctx); err != nil || n != 2 {
		t.Fatalf("swept %d, %v", n, err)
	}
	h.StartRecorder(nil)
	h.WaitCaughtUp()
	st, err := h.JS.Stream(ctx, streams.StreamSessions)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"e1", "e2"} { // stored again, past the duplicate window
		m, err := st.GetLastMsgForSubject(ctx, "spine.session."+id+".end")
		if err != nil {
			t.Fatal(err)
		}
		h.PublishRaw(m.Subject, m.Data, nil)
	}
	if n, err := w2.Sweep(ctx); err != nil || n != 0 {
		t.Fatalf("a second node swept %d, %v", n, err)
	}
	h.WaitCaughtUp()
	if s := session(t, h, "e1"); s.Status != "done" {
		t.Fatalf("e1, ended by its producer = %+v", s)
	}
	if s := session(t, h, "e2"); s.Status != "timeout" || !s.EndedAt.Equal(c.now.Truncate(time.Microsecond)) {
		t.Fatalf("e2, ended by the sweeper = %+v", s)
	}
	if dl := deadLetters(t, h); len(dl) != 0 {
		t.Fatalf("dead letters = %+v, want none", dl)
	}
}

// Sessions whose ends are published but not yet projected (a stuck
// partition) do not hold back those sorting after them: the next sweep
// reads the next page.
func TestSweepPagesPastPublishedEnds(t *testing.T) {
	h := spinetest.New(t)
	p := h.StartRecorder(nil)
	c := &clock{}
	w := pagedSweeper(t, h, c, 2)
	h.Publish(spinetest.Start("p1"), spinetest.Start("p2"), spinetest.Start("p3"))
	h.WaitCaughtUp()
	p.Stop()
	c.now = time.Now().Add(2 * idle)
	for i, want := range []int{2, 1, 0} {
		if n, err := w.Sweep(ctx); err != nil || n != want {
			t.Fatalf("sweep %d published %d, %v; want %d", i+1, n, err, want)
		}
	}
	h.StartRecorder(nil)
	h.WaitCaughtUp()
	if n := count(t, h, `SELECT count(*) FROM sessions WHERE status = 'timeout'`); n != 3 {
		t.Fatalf("%d sessions timed out, want 3", n)
	}
}

// A session running when migration 009 ran was given the upgrade's time,
// later than its last envelope's stored time: the end judged on it is
// applied live and replayed the same into a database rebuilt from the log.
func TestSweptEndOfAnUpgradedRowIsReplayed(t *testing.T) {
	h := spinetest.New(t)
	p := h.StartRecorder(nil)
	c := &clock{}
	w := sweeper(t, h, c)
	h.Publish(spinetest.Start("u1"))
	h.WaitCaughtUp()
	if _, err := h.Pool.Exec(ctx, `UPDATE sessions SET received_at = received_at + interval '1 minute'`); err != nil {
		t.Fatal(err)
	}
	upgraded, _ := sweepTimes(t, h, "u1")
	if n := sweep(t, h, w, c, upgraded.Add(idle+time.Microsecond)); n != 1 || session(t, h, "u1").Status != "timeout" {
		t.Fatalf("swept %d: the upgraded row did not time out live", n)
	}
	p.Stop()
	rebuilt, _ := pgtest.New(t)
	h.StartRecorder(&spinetest.RecorderOpts{Pool: rebuilt})
	h.WaitCaughtUp()
	s, err := recorder.GetSession(ctx, rebuilt, alice, "u1")
	if err != nil || s.Status != "timeout" {
		t.Fatalf("rebuilt u1 = %+v, %v: want the live end replayed", s, err)
	}
}
