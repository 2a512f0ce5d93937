package recorder_test

import (
	"testing"
	"time"

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
	w, err := recorder.NewSweeper(recorder.SweeperConfig{Pool: h.Pool, Publisher: h.Pub, IdleTimeout: idle,
		CancelGrace: grace, Now: c.Now, Logger: spinetest.Logger(t)})
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
