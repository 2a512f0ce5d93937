package accounting_test

import (
	"fmt"
	"testing"

	"github.com/spinehq/spine/internal/spinetest"
	"github.com/spinehq/spine/streams"
)

// telemetryEnd builds the telemetry's end of a session (hook SessionEnd).
func telemetryEnd(session string, n int64) *streams.Envelope {
	return spinetest.Telemetry(session, n, "end", &streams.Telemetry{Kind: streams.TelemetryEnd,
		Source: streams.TelemetryHook, Reason: "other"})
}

// again is a copy of e sent again under another envelope id (an exporter's
// retry past the duplicate window), with other counts: the first copy's
// must stay.
func again(e *streams.Envelope, id string) *streams.Envelope {
	c := *e
	t := *e.Telemetry
	t.Usage, t.TotalCost = usage(1000, 1000, 0, 0), ptr(9.0)
	c.ID, c.Telemetry = id, &t
	return &c
}

// telemetryRow is a telemetry session's router-call row, every column a
// test reads.
type telemetryRow struct {
	Status, Billing, Signal, Door, Model, Effort, Surface string
	Usage                                                 *string
	Input, Output, CacheRead, CacheWrite, Reasoning       *int64
	Cost                                                  *string
}

func (f *fixture) telemetryRow(session string) telemetryRow {
	f.T.Helper()
	var r telemetryRow
	err := f.Pool.QueryRow(ctx, `SELECT status, billing, billing_signal, door, served_model, served_effort,
		execution_surface, usage::text, input_tokens, output_tokens, cache_read_tokens, cache_write_tokens,
		reasoning_tokens, total_cost::text FROM router_calls WHERE session_id = $1`, session).Scan(&r.Status,
		&r.Billing, &r.Signal, &r.Door, &r.Model, &r.Effort, &r.Surface, &r.Usage, &r.Input, &r.Output, &r.CacheRead,
		&r.CacheWrite, &r.Reasoning, &r.Cost)
	if err != nil {
		f.T.Fatalf("router call of %s: %v", session, err)
	}
	return r
}

// rollupIsFresh fails the test unless cost_days is, row for row and
// character for character, the aggregate of router_calls (migration 014's
// backfill).
func (f *fixture) rollupIsFresh() {
	f.T.Helper()
	const order = `org, day, billing, app, served_model, member, plan_id, worker_id`
	var have, want string
	err := f.Pool.QueryRow(ctx, `SELECT coalesce(string_agg(d::text, E'\n' ORDER BY `+order+`), '') FROM cost_days d`).Scan(&have)
	if err == nil {
		err = f.Pool.QueryRow(ctx, `SELECT coalesce(string_agg(d::text, E'\n' ORDER BY `+order+`), '') FROM (
			SELECT org, (at AT TIME ZONE 'UTC')::date AS day, billing, app, served_model, member, plan_id, worker_id,
				count(*), count(usage), count(total_cost),
				least(coalesce(sum(input_tokens), 0), 9223372036854775807)::bigint,
				least(coalesce(sum(output_tokens), 0), 9223372036854775807)::bigint,
				least(coalesce(sum(cache_read_tokens), 0), 9223372036854775807)::bigint,
				least(coalesce(sum(cache_write_tokens), 0), 9223372036854775807)::bigint,
				least(coalesce(sum(reasoning_tokens), 0), 9223372036854775807)::bigint,
				sum(total_cost)
			FROM router_calls GROUP BY 1, 2, 3, 4, 5, 6, 7, 8) d`).Scan(&want)
	}
	if err != nil {
		f.T.Fatal(err)
	}
	if have != want {
		f.T.Fatalf("cost_days is not the aggregate of router_calls:\nhave %s\nwant %s", have, want)
	}
}

// A telemetry session's row is the sum of its requests: tokens by kind
// (input with the cache), the reported costs added exactly, the latest
// request's model and effort, door session, ended by its telemetry's end;
// NULL cost when no request reported one, never 0. The sweeper's end and
// a worker disconnect end one the same way.
func TestTelemetrySessionRowIsItsRequests(t *testing.T) {
	f := newFixture(t)
	latest := spinetest.Request("t1", 3000, "req_3", "claude-opus-4-8", usage(5, 7, 0, 0), ptr(0.2))
	latest.Telemetry.Effort = "high"
	f.publish(spinetest.Request("t1", 2000, "req_2", "claude-haiku-4-5", usage(1, 2, 30, 40), nil), latest,
		spinetest.Request("t1", 1000, "req_1", "claude-opus-4-8", usage(10, 20, 300, 400), ptr(0.1)),
		spinetest.ToolUse("t1", 2500, "toolu_1", streams.PhasePost), telemetryEnd("t1", 4000))
	f.publish(spinetest.Request("t2", 1000, "a", "claude-opus-4-8", usage(3, 4, 0, 0), nil),
		spinetest.Request("t2", 2000, "b", "claude-opus-4-8", usage(3, 4, 0, 0), nil), telemetryEnd("t2", 5000))
	// Codex's machine and one it never ends: its worker's disconnect and the sweeper end them.
	f.publish(onWorkerTel(spinetest.Request("t3", 1000, "codex-1", "gpt-5.4", usage(8, 9, 0, 0), ptr(0.3)), "host-3"),
		spinetest.Request("t4", 1000, "r", "claude-opus-4-8", usage(1, 1, 0, 0), ptr(0.05)))
	f.wait()
	if n := f.count(`SELECT count(*) FROM router_calls WHERE session_id IN ('t3', 't4')`); n != 0 {
		t.Fatalf("%d rows of telemetry sessions still running", n)
	}
	swept := spinetest.End("t4", "done", "", "")
	since := spinetest.T0
	swept.SweptSince, swept.ID = &since, "t4-swept"
	f.publish(spinetest.Disconnect("host-3", "gone"), swept)
	f.wait()

	r := f.telemetryRow("t1")
	if r.Status != "done" || r.Door != "session" || r.Surface != "cockpit-app:claude-code" || r.Model != "claude-opus-4-8" ||
		r.Effort != "high" || r.Billing != "unknown" || r.Signal != "" {
		t.Fatalf("t1: %+v", r)
	}
	if *r.Input != 10+300+400+1+30+40+5 || *r.Output != 29 || *r.CacheRead != 330 || *r.CacheWrite != 440 || *r.Reasoning != 0 {
		t.Fatalf("t1 tokens: in %d out %d cache read %d write %d", *r.Input, *r.Output, *r.CacheRead, *r.CacheWrite)
	}
	if r.Cost == nil || *r.Cost != "0.3" { // 0.1 + 0.2 as numeric adds them, not 0.30000000000000004
		t.Fatalf("t1 cost %v, want 0.3", r.Cost)
	}
	if r.Usage == nil || *r.Usage != `{"inputTokens": 16, "outputTokens": 29, "cacheReadTokens": 330, "reasoningTokens": 0, "cacheWriteTokens": 440}` {
		t.Fatalf("t1 usage %v: want the requests' buckets summed", r.Usage)
	}
	if r := f.telemetryRow("t2"); r.Cost != nil || *r.Input != 6 || r.Status != "done" {
		t.Fatalf("t2 (no request reported a cost): %+v, want cost NULL", r)
	}
	if r := f.telemetryRow("t3"); r.Status != "disconnected" || *r.Cost != "0.3" || *r.Input != 8 {
		t.Fatalf("t3 after its machine's disconnect: %+v", r)
	}
	if r := f.telemetryRow("t4"); r.Status != "done" || *r.Cost != "0.05" {
		t.Fatalf("t4 after the sweeper: %+v", r)
	}
	if n := f.count(`SELECT count(*) FROM router_call_requests`); n != 7 {
		t.Fatalf("%d requests in the ledger, want 7", n)
	}
	f.rollupIsFresh()
}

func onWorkerTel(e *streams.Envelope, worker string) *streams.Envelope {
	e.WorkerID = worker
	return e
}

// A request sent again — in the batch of its first copy, in a later one,
// after the session's end — is counted once, as first reported.
func TestResentRequestCountsOnce(t *testing.T) {
	f := newFixture(t)
	r1 := spinetest.Request("t1", 1000, "req_1", "claude-opus-4-8", usage(10, 20, 0, 0), ptr(0.25))
	r2 := spinetest.Request("t1", 2000, "req_2", "claude-opus-4-8", usage(1, 2, 0, 0), ptr(0.5))
	f.publish(r1, again(r1, "r1-again"), r2)
	f.wait()
	f.publish(again(r1, "r1-later"), telemetryEnd("t1", 3000))
	f.wait()
	f.publish(again(r2, "r2-after-end"), again(r1, "r1-after-end"))
	f.wait()
	if r := f.telemetryRow("t1"); *r.Input != 11 || *r.Output != 22 || *r.Cost != "0.75" {
		t.Fatalf("t1: %+v, want input 11, output 22, cost 0.75", r)
	}
	if n := f.count(`SELECT count(*) FROM router_call_requests WHERE session_id = 't1'`); n != 2 {
		t.Fatalf("%d requests in the ledger, want 2", n)
	}
	if got := f.metric("spine_accounting_tokens_total", map[string]string{"kind": "input"}); got != 11 {
		t.Fatalf("input tokens counted %v, want 11", got)
	}
	f.rollupIsFresh()
}

// A request that arrives after its session's row was written (Claude
// Code's last export comes after SessionEnd) updates the row and the day
// rollup in the same transaction: in place when the row keeps its model,
// moved to another group when the late request is the latest and names
// another model or the telemetry names a billing; cost_days stays the
// aggregate of router_calls.
func TestLateRequestUpdatesRowAndRollup(t *testing.T) {
	f := newFixture(t)
	for _, s := range []string{"t1", "t2", "t3"} {
		f.publish(spinetest.Request(s, 1000, "req_1", "claude-opus-4-8", usage(10, 20, 0, 0), ptr(0.25)),
			telemetryEnd(s, 3000))
	}
	f.publish(spinetest.Start("other"), spinetest.End("other", "done", "claude-opus-4-8", ""))
	f.wait()
	// t1: earlier than the latest, same model; t2: the latest, another model; t3: a billing.
	sub := spinetest.Request("t3", 3500, "req_3", "claude-opus-4-8", nil, nil)
	sub.Billing = "subscription"
	f.publish(spinetest.Request("t1", 500, "req_0", "claude-haiku-4-5", usage(1, 1, 0, 0), ptr(0.125)),
		spinetest.Request("t2", 3500, "req_2", "claude-haiku-4-5", usage(2, 2, 0, 0), nil), sub)
	f.wait()
	if r := f.telemetryRow("t1"); *r.Input != 11 || *r.Cost != "0.375" || r.Model != "claude-opus-4-8" {
		t.Fatalf("t1 after a late request: %+v", r)
	}
	if r := f.telemetryRow("t2"); *r.Input != 12 || *r.Cost != "0.25" || r.Model != "claude-haiku-4-5" {
		t.Fatalf("t2 after a late request: %+v", r)
	}
	if r := f.telemetryRow("t3"); *r.Input != 10 || r.Billing != "subscription" || r.Signal != "subscription" {
		t.Fatalf("t3 after a late billing: %+v", r)
	}
	f.rollupIsFresh()
	if got := f.metric("spine_accounting_tokens_total", map[string]string{"kind": "input"}); got != 11+12+10 {
		t.Fatalf("input tokens counted %v, want 33", got)
	}
}

// A session another door started (spine collect, spine run) keeps that
// door's end as its row, whether its telemetry came after the start or
// before it (the start claims it): its requests are in the ledger, not
// counted again, and its telemetry's end writes no row.
func TestSessionOfAnotherDoorCountsItsEnd(t *testing.T) {
	f := newFixture(t)
	end := func(session string) *streams.Envelope {
		e := spinetest.End(session, "done", "claude-opus-4-8", "")
		e.Usage, e.TotalCost, e.Billing = usage(100, 200, 0, 0), ptr(1.5), "metered"
		return e
	}
	// "after": collect's start first. "before": telemetry first, then collect's start.
	f.publish(spinetest.Start("after"), spinetest.Request("after", 1000, "req_1", "m", usage(1, 1, 0, 0), ptr(0.1)),
		telemetryEnd("after", 2000))
	f.publish(spinetest.Request("before", 1000, "req_1", "m", usage(1, 1, 0, 0), ptr(0.1)))
	f.wait()
	start := spinetest.Start("before")
	start.PlanID, start.WorkerID = "p1", "laptop"
	f.publish(start, spinetest.Request("before", 2000, "req_2", "m", usage(1, 1, 0, 0), ptr(0.1)),
		telemetryEnd("before", 3000))
	f.wait()
	if n := f.count(`SELECT count(*) FROM router_calls`); n != 0 {
		t.Fatalf("%d rows before the doors' ends: the telemetry's end wrote one", n)
	}
	f.publish(end("after"), end("before"))
	f.wait()
	for _, s := range []string{"after", "before"} {
		r := f.telemetryRow(s)
		if *r.Input != 100 || *r.Output != 200 || *r.Cost != "1.5" || r.Billing != "metered" {
			t.Fatalf("%s: %+v, want the end's usage", s, r)
		}
	}
	var plan, worker string
	if err := f.Pool.QueryRow(ctx, `SELECT plan_id, worker_id FROM router_calls WHERE session_id = 'before'`).Scan(&plan, &worker); err != nil ||
		plan != "p1" || worker != "laptop" {
		t.Fatalf("before: plan %q worker %q (%v), want the start's", plan, worker, err)
	}
	if n := f.count(`SELECT count(*) FROM router_call_requests`); n != 3 {
		t.Fatalf("%d requests in the ledger, want 3", n)
	}
	// A late request of a door's session changes nothing.
	f.publish(spinetest.Request("before", 4000, "req_3", "m", usage(1, 1, 0, 0), ptr(0.1)))
	f.wait()
	if r := f.telemetryRow("before"); *r.Input != 100 {
		t.Fatalf("before after a late request: %+v", r)
	}
	if got := f.metric("spine_accounting_calls_total", nil); got != 2 {
		t.Fatalf("%v calls counted, want 2", got)
	}
	f.rollupIsFresh()
}

// A telemetry session's billing is its telemetry's: the last non-empty
// billing its envelopes named (the member's token, Codex's auth_mode);
// unknown with an empty signal when none did, never inferred; unknown too
// when no request reported usage, as for every row.
func TestTelemetryBillingIsTheEnvelopes(t *testing.T) {
	f := newFixture(t)
	billed := func(e *streams.Envelope, billing string) *streams.Envelope {
		e.Billing = billing
		return e
	}
	req := func(s string, n int64) *streams.Envelope {
		return spinetest.Request(s, n, fmt.Sprintf("r%d", n), "m", usage(1, 1, 0, 0), nil)
	}
	f.publish(billed(req("sub", 1), "subscription"), req("sub", 2), telemetryEnd("sub", 3),
		billed(req("changed", 1), "metered"), billed(req("changed", 2), "subscription"), req("changed", 3),
		telemetryEnd("changed", 4),
		req("silent", 1), telemetryEnd("silent", 2),
		billed(spinetest.ToolUse("nousage", 1, "toolu_1", streams.PhasePost), "metered"), telemetryEnd("nousage", 2))
	f.wait()
	for s, want := range map[string][2]string{"sub": {"subscription", "subscription"},
		"changed": {"subscription", "subscription"}, "silent": {"unknown", ""}, "nousage": {"unknown", "metered"}} {
		if r := f.telemetryRow(s); r.Billing != want[0] || r.Signal != want[1] {
			t.Errorf("%s: billing %q signal %q, want %q %q", s, r.Billing, r.Signal, want[0], want[1])
		}
	}
}

// Two requests at the same time: the latest is the one whose request id
// sorts last bytewise (COLLATE "C"), in the recorder's session as on
// accounting's row, whatever the database's collation. The ledgers' ids
// are given an ICU collation where the machine has one: under it "req_B"
// sorts after "req_a", bytewise before.
func TestLatestRequestTieIsTheSameInRecorderAndAccounting(t *testing.T) {
	f := newFixture(t)
	var icu bool
	if err := f.Pool.QueryRow(ctx, `SELECT EXISTS (SELECT FROM pg_collation WHERE collname = 'en-US-x-icu')`).Scan(&icu); err != nil {
		t.Fatal(err)
	}
	if !icu {
		// Without a collation that sorts "req_B" after "req_a" the two
		// orders agree anyway, and the test could not fail.
		t.Skip("no en-US-x-icu collation in this PostgreSQL (built without ICU): the tie cannot differ")
	}
	{
		for _, tbl := range []string{"session_requests", "router_call_requests"} {
			if _, err := f.Pool.Exec(ctx, `ALTER TABLE `+tbl+` ALTER COLUMN request_id TYPE text COLLATE "en-US-x-icu"`); err != nil {
				t.Fatal(err)
			}
		}
	}
	f.StartRecorder(nil)
	f.publish(spinetest.Request("tie", 1000, "req_a", "claude-opus-4-8", usage(1, 1, 0, 0), nil),
		spinetest.Request("tie", 1000, "req_B", "claude-haiku-4-5", usage(1, 1, 0, 0), nil), telemetryEnd("tie", 2000))
	f.caughtUp()
	var model string
	if err := f.Pool.QueryRow(ctx, `SELECT model FROM sessions WHERE id = 'tie'`).Scan(&model); err != nil {
		t.Fatal(err)
	}
	if r := f.telemetryRow("tie"); model != "claude-opus-4-8" || r.Model != model {
		t.Fatalf("the recorder's model %q, accounting's %q: want req_a's, claude-opus-4-8 (icu collation: %v)", model, r.Model, icu)
	}
}
