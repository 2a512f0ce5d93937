package recorder_test

import (
	"testing"

	"github.com/spinehq/spine/internal/spinetest"
	"github.com/spinehq/spine/library"
	"github.com/spinehq/spine/recorder"
)

// A recorder that lost the lead and regains it keeps the chunks it
// committed of a running session, but the chunks the other leader wrote
// meanwhile are the table's: the session's end makes its transcript of
// every chunk, byte for byte the one built from the table.
func TestTranscriptAfterAnotherLeaderWroteChunks(t *testing.T) {
	h := spinetest.New(t)
	mine, lead := recorder.New(recorder.Config{}), leader(h)

	stop := lead(mine)
	h.Publish(spinetest.Start("s1"), spinetest.Start("s2"))
	h.WaitCaughtUp()
	h.Publish(spinetest.Text("s1", 1, "first, mine\n"), spinetest.Text("s2", 1, "only mine\n"))
	stop()

	stop = lead(nil) // another instance leads for a while
	h.Publish(spinetest.Text("s1", 2, "second, the other leader's\n"), spinetest.Stderr("s1", 3, "third, the other's too\n"))
	stop()

	stop = lead(mine) // and the lead comes back
	h.Publish(spinetest.End("s1", "done", "", ""), spinetest.Text("s2", 2, "still only mine\n"))
	h.WaitCaughtUp()
	h.Publish(spinetest.End("s2", "done", "", ""))
	stop()

	for _, id := range []string{"s1", "s2"} {
		s := session(t, h, id)
		want, err := recorder.BuildTranscript(ctx, h.Pool, id)
		if err != nil || s.TranscriptFileID != library.Digest(want) {
			got, _ := library.NewPGStore(nil).Get(ctx, h.Pool, s.TranscriptFileID)
			t.Fatalf("%s: transcript\n%s\nwant the table's\n%s(%v)", id, got, want, err)
		}
	}
}

// A worker's disconnect ends its sessions with their transcripts: one this
// recorder saw start, whose chunks another leader wrote, is the table's.
func TestDisconnectAfterAnotherLeaderWroteChunks(t *testing.T) {
	h := spinetest.New(t)
	mine, lead := recorder.New(recorder.Config{}), leader(h)
	stop := lead(mine)
	h.Publish(spinetest.Start("d1"))
	stop()
	stop = lead(nil)
	h.Publish(spinetest.Text("d1", 1, "the other leader's\n"), spinetest.Text("d1", 2, "and this\n"))
	stop()
	stop = lead(mine)
	h.Publish(spinetest.Disconnect("w1", "laptop closed"))
	stop()

	s := session(t, h, "d1")
	want, err := recorder.BuildTranscript(ctx, h.Pool, "d1")
	if err != nil || s.Status != "disconnected" || len(want) == 0 || s.TranscriptFileID != library.Digest(want) {
		got, _ := library.NewPGStore(nil).Get(ctx, h.Pool, s.TranscriptFileID)
		t.Fatalf("%s: transcript\n%s\nwant the table's\n%s(%v)", s.Status, got, want, err)
	}
}

// leader returns a way to let a recorder lead h's stream (nil: a new one,
// another instance's) until the stop it returns, which waits for it to
// catch up first.
func leader(h *spinetest.Harness) func(*recorder.Recorder) func() {
	return func(rec *recorder.Recorder) func() {
		p := h.StartRecorder(&spinetest.RecorderOpts{Recorder: rec})
		return func() { h.WaitCaughtUp(); p.Stop() }
	}
}
