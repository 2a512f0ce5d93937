package accounting_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/spinehq/spine/internal/spinetest"
	"github.com/spinehq/spine/streams"
)

func usage(in, out, cacheRead, cacheWrite int64) *streams.Usage {
	return &streams.Usage{InputTokens: in, OutputTokens: out, CacheReadTokens: cacheRead, CacheWriteTokens: cacheWrite}
}

func onWorker(session, worker string) *streams.Envelope {
	e := spinetest.Start(session)
	e.WorkerID = worker
	return e
}

// Every session writes exactly one router-call row whatever its ending:
// each end status, a worker disconnect (which ends every live session on
// that worker and nothing else), and repeats that must not add a second.
func TestOneRowPerSessionWhateverTheEnding(t *testing.T) {
	f := newFixture(t)
	statuses := []string{"done", "failed", "cancelled", "disconnected", "timeout"}
	for _, st := range statuses {
		f.publish(onWorker("end-"+st, "w1"), spinetest.End("end-"+st, st, "claude-sonnet-4-5", "high"))
	}
	// Live on w2 when it disconnects: two sessions, one already ended.
	f.publish(onWorker("live-a", "w2"), onWorker("live-b", "w2"), onWorker("ended-c", "w2"),
		spinetest.End("ended-c", "done", "m", ""), onWorker("other-w3", "w3"))
	f.publish(spinetest.Disconnect("w2", "laptop closed"))
	// Repeats: a second end, a second disconnect, an end after the
	// disconnect, a duplicate start; and an end with no start at all.
	again := spinetest.End("end-done", "failed", "m", "")
	again.ID = "end-done-again"
	late := spinetest.End("live-a", "done", "m", "")
	disc2 := spinetest.Disconnect("w2", "again")
	disc2.ID = "disc-w2-again"
	dupStart := onWorker("end-failed", "w1")
	dupStart.ID = "end-failed-start-again"
	f.publish(again, late, disc2, dupStart, spinetest.End("never-started", "done", "m", ""))
	f.wait()

	for _, st := range statuses {
		got := f.calls("end-" + st)
		if len(got) != 1 || got[0].Status != st {
			t.Fatalf("session end-%s: rows %+v, want one with status %s", st, got, st)
		}
	}
	for _, id := range []string{"live-a", "live-b"} {
		got := f.calls(id)
		if len(got) != 1 || got[0].Status != "disconnected" || got[0].Billing != "unknown" || got[0].Cost != nil ||
			got[0].Usage != nil || got[0].Input != nil || got[0].Model != "" {
			t.Fatalf("%s after disconnect: %+v", id, got)
		}
	}
	if got := f.calls("ended-c"); len(got) != 1 || got[0].Status != "done" {
		t.Fatalf("ended-c: %+v (the disconnect must not add a row)", got)
	}
	if got := f.calls("other-w3"); len(got) != 0 {
		t.Fatalf("w3's session has a row %+v: another worker's disconnect ended it", got)
	}
	if got := f.calls("end-done"); got[0].Status != "done" {
		t.Fatalf("a second end replaced the first: %+v", got)
	}
	if n := f.count(`SELECT count(*) FROM router_calls WHERE session_id = 'never-started'`); n != 0 {
		t.Fatal("an end with no start wrote a row")
	}
	if n := f.count(`SELECT count(*) FROM router_calls`); n != len(statuses)+3 {
		t.Fatalf("%d router calls, want %d", n, len(statuses)+3)
	}
	// w3 still has a live session; its disconnect writes exactly that row.
	d3 := spinetest.Disconnect("w3", "")
	f.publish(d3)
	f.wait()
	if got := f.calls("other-w3"); len(got) != 1 || got[0].Status != "disconnected" {
		t.Fatalf("other-w3 after its worker disconnected: %+v", got)
	}
}

// The row carries executionSurface, door, served model and effort as
// reported, and the usage verbatim.
func TestRowFields(t *testing.T) {
	f := newFixture(t)
	end := spinetest.End("s1", "done", "claude-opus-4-1", "")
	end.Usage = usage(10, 20, 30, 40)
	end.Usage.Raw = []byte(`{"input_tokens":10,"note":"as the app said"}`)
	end.Billing, end.Door = "metered", "app"
	end.TotalCost = ptr(0.1234)
	f.publish(spinetest.Start("s1"), end)
	f.wait()
	var surface, door, model, effort, raw, cost string
	var in, out, cr, cw, rs int64
	err := f.Pool.QueryRow(ctx, `SELECT execution_surface, door, served_model, served_effort, usage->>'raw',
		input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, reasoning_tokens, total_cost::text
		FROM router_calls WHERE session_id = 's1'`).Scan(&surface, &door, &model, &effort, &raw, &in, &out, &cr, &cw, &rs, &cost)
	if err != nil {
		t.Fatal(err)
	}
	if surface != "cockpit-app:claude-code" || door != "app" || model != "claude-opus-4-1" || effort != "" {
		t.Fatalf("surface %q door %q model %q effort %q", surface, door, model, effort)
	}
	// OpenTelemetry: input includes the cache reads and writes.
	if in != 10+30+40 || out != 20 || cr != 30 || cw != 40 || rs != 0 {
		t.Fatalf("tokens in %d out %d cacheRead %d cacheWrite %d reasoning %d", in, out, cr, cw, rs)
	}
	if raw != `{"note": "as the app said", "input_tokens": 10}` || cost != "0.1234" {
		t.Fatalf("raw %s, cost %s", raw, cost)
	}
}

// billing is unknown whenever the usage report or the subscription signal
// is silent; otherwise it is the signal.
func TestBillingRules(t *testing.T) {
	f := newFixture(t)
	cases := []struct {
		usage  *streams.Usage
		signal string
		want   string
	}{
		{usage(1, 1, 0, 0), "metered", "metered"},
		{usage(1, 1, 0, 0), "subscription", "subscription"},
		{usage(1, 1, 0, 0), "", "unknown"},
		{nil, "metered", "unknown"},
		{nil, "subscription", "unknown"},
		{nil, "", "unknown"},
		{usage(0, 0, 0, 0), "subscription", "subscription"}, // a report of zero is a report
	}
	for i, c := range cases {
		id := fmt.Sprintf("b%d", i)
		end := spinetest.End(id, "done", "m", "")
		end.Usage, end.Billing = c.usage, c.signal
		f.publish(spinetest.Start(id), end)
	}
	f.wait()
	for i, c := range cases {
		got := f.calls(fmt.Sprintf("b%d", i))
		if len(got) != 1 || got[0].Billing != c.want || got[0].Signal != c.signal {
			t.Errorf("usage %v signal %q: rows %+v, want billing %s", c.usage != nil, c.signal, got, c.want)
		}
	}
}

// An end that came through HTTP ingest for another member's session is
// refused by the recorder; accounting must not bill it either.
func TestAnotherCallersEndIsIgnored(t *testing.T) {
	f := newFixture(t)
	f.publish(spinetest.Start("s1"))
	end := spinetest.End("s1", "done", "m", "")
	data, _ := end.Marshal()
	msg := nats.NewMsg(end.Subject())
	msg.Data = data
	msg.Header.Set(streams.HeaderOrg, "acme")
	msg.Header.Set(streams.HeaderMember, "mallory")
	ack, err := f.JS.PublishMsg(ctx, msg)
	if err != nil {
		t.Fatal(err)
	}
	f.saw(ack.Sequence)
	f.wait()
	if got := f.calls("s1"); len(got) != 0 {
		t.Fatalf("mallory's end billed alice's session: %+v", got)
	}
	mine := spinetest.End("s1", "failed", "m", "")
	mine.ID = "s1-end-2"
	f.publish(mine)
	f.wait()
	if got := f.calls("s1"); len(got) != 1 || got[0].Status != "failed" {
		t.Fatalf("the owner's end: %+v", got)
	}
}

// An end the producer did not send reports no usage: the idle sweeper's
// and a worker disconnect's rows take the usage and cost the producer last
// reported while the session ran (session.usage), as reported, billing
// unknown. A producer's own end without usage still has none, and a
// session that reported nothing running has none either.
func TestSweptAndDisconnectedRowsTakeTheRunningUsage(t *testing.T) {
	f := newFixture(t)
	cost := 0.5
	running := func(session string, n int64, c *float64) *streams.Envelope {
		return &streams.Envelope{V: 1, Type: streams.TypeSessionUsage, ID: fmt.Sprintf("%s-usage-%d", session, n),
			At: time.Date(2026, 12, 1, 10, 0, int(n), 0, time.UTC), SessionID: session, Usage: usage(n, 2*n, 0, 0), TotalCost: c}
	}
	swept := func(session string) *streams.Envelope {
		e := spinetest.End(session, "timeout", "", "")
		since := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
		e.SweptSince, e.Error = &since, "idle_timeout"
		return e
	}
	// Started and reported in one batch, swept in a later one.
	f.publish(onWorker("sw", "w1"), running("sw", 3, nil), running("sw", 7, &cost), onWorker("dis", "w2"),
		running("dis", 5, nil), onWorker("own", "w1"), running("own", 2, nil), onWorker("silent", "w3"))
	f.wait()
	f.publish(swept("sw"), spinetest.Disconnect("w2", ""), spinetest.End("own", "done", "m", ""), swept("silent"))
	f.wait()
	want := map[string]struct {
		in   int64
		cost string
	}{"sw": {7, "0.5"}, "dis": {5, ""}}
	for id, w := range want {
		got := f.calls(id)
		if len(got) != 1 || got[0].Input == nil || *got[0].Input != w.in || *got[0].Output != 2*w.in || got[0].Billing != "unknown" ||
			(w.cost == "") != (got[0].Cost == nil) || got[0].Cost != nil && *got[0].Cost != w.cost {
			t.Fatalf("%s: rows %+v, want input %d cost %q", id, got, w.in, w.cost)
		}
	}
	for _, id := range []string{"own", "silent"} {
		if got := f.calls(id); len(got) != 1 || got[0].Input != nil || got[0].Usage != nil {
			t.Fatalf("%s: rows %+v, want one without usage", id, got)
		}
	}
}
