package recorder_test

import (
	"testing"
	"time"

	"github.com/spinehq/spine/internal/spinetest"
	"github.com/spinehq/spine/streams"
)

func runningUsage(session string, n int64, cost *float64) *streams.Envelope {
	return &streams.Envelope{V: 1, Type: streams.TypeSessionUsage, ID: session + "-usage-" + string(rune('a'+n)),
		At: time.Date(2026, 12, 1, 10, 0, int(n), 0, time.UTC), SessionID: session,
		Usage: &streams.Usage{InputTokens: n, OutputTokens: 2 * n, CacheReadTokens: 3 * n}, TotalCost: cost}
}

// A running session's usage so far (session.usage) is on its row — usage,
// tokens and totalCost, the last one sent — until the end replaces it with
// its own (none when the end has none); one sent after the end changes
// nothing and is no dead letter.
func TestRunningUsageOnTheSession(t *testing.T) {
	h := running(t)
	cost := func(v float64) *float64 { return &v }
	h.Publish(spinetest.Start("u1"), spinetest.Text("u1", 1, "hi"), runningUsage("u1", 1, cost(0.1)), runningUsage("u1", 2, cost(0.2)),
		spinetest.Start("u2"), runningUsage("u2", 5, nil))
	h.WaitCaughtUp()
	s := session(t, h, "u1")
	if s.Ended() || s.Tokens == nil || s.Tokens.Input != 2+6 || s.Tokens.Output != 4 || s.TotalCost == nil || *s.TotalCost != 0.2 {
		t.Fatalf("running session: tokens %+v cost %v ended %v", s.Tokens, s.TotalCost, s.Ended())
	}

	end := spinetest.End("u1", "done", "m", "")
	end.Usage = &streams.Usage{InputTokens: 7, OutputTokens: 8}
	h.Publish(end, runningUsage("u1", 3, cost(0.3)), spinetest.End("u2", "done", "m", ""))
	h.WaitCaughtUp()
	s = session(t, h, "u1")
	if !s.Ended() || s.Tokens == nil || s.Tokens.Input != 7 || s.Tokens.Output != 8 || s.TotalCost != nil {
		t.Fatalf("ended session: tokens %+v cost %v", s.Tokens, s.TotalCost)
	}
	if s := session(t, h, "u2"); s.Tokens != nil || s.Usage != nil {
		t.Fatalf("a session ended without usage keeps its running usage: %+v %s", s.Tokens, s.Usage)
	}
	if dl := deadLetters(t, h); len(dl) != 0 {
		t.Fatalf("dead letters: %+v", dl)
	}
}

// The idle sweeper's end reports no usage: the session keeps the running
// usage and cost its producer last reported, so a collector that went
// quiet past the server's idle timeout still leaves its usage on the row;
// so does a worker disconnect's.
func TestSweptEndKeepsTheRunningUsage(t *testing.T) {
	h := running(t)
	c := &clock{}
	w := sweeper(t, h, c)
	cost := 0.25
	h.Publish(spinetest.Start("sw1"), runningUsage("sw1", 4, &cost))
	h.WaitCaughtUp()
	if n := sweep(t, h, w, c, time.Now().Add(2*idle)); n != 1 {
		t.Fatalf("swept %d sessions", n)
	}
	s := session(t, h, "sw1")
	if !s.Ended() || s.Status != "timeout" || s.Tokens == nil || s.Tokens.Input != 4+12 || s.Tokens.Output != 8 ||
		s.TotalCost == nil || *s.TotalCost != cost {
		t.Fatalf("swept session: status %s, tokens %+v, cost %v", s.Status, s.Tokens, s.TotalCost)
	}
	// A worker disconnect's end, which reports nothing either.
	start := spinetest.Start("dc1")
	start.WorkerID = "w-dc"
	h.Publish(start, runningUsage("dc1", 2, nil), spinetest.Disconnect("w-dc", "gone"))
	h.WaitCaughtUp()
	if s := session(t, h, "dc1"); !s.Ended() || s.Status != "disconnected" || s.Tokens == nil || s.Tokens.Output != 4 {
		t.Fatalf("disconnected session: status %s, tokens %+v", s.Status, s.Tokens)
	}
}
