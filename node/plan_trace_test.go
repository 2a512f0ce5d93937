package node_test

import (
	"bytes"
	"testing"
	"time"

	"github.com/spinehq/spine/internal/spinetest"
	"github.com/spinehq/spine/spine"
	"github.com/spinehq/spine/streams"
	"github.com/spinehq/spine/trace"
)

// planSession is a start (the nth second after T0) of a session serving
// step of plan run run of plan-7, and its end: billing and usage as given,
// cost when cost is set; with end false the session still runs.
func planSession(id, run, step string, nth int, billing string, usage *streams.Usage, cost *float64, end bool) []*streams.Envelope {
	s := spinetest.Start(id)
	s.At = spinetest.T0.Add(time.Duration(nth) * time.Second)
	s.PlanID, s.ParentRunID, s.StepID = "plan-7", run, step
	if !end {
		return []*streams.Envelope{s}
	}
	e := spinetest.End(id, "done", "claude-opus-4-5", "high")
	e.Billing, e.Usage, e.TotalCost = billing, usage, cost
	return []*streams.Envelope{s, e}
}

// planFixture records plan-7 for alice: plan run plan-run-42 with steps
// step-1 (p1a metered with a cost, then p1c with no usage), step-2 (p1b,
// subscription, no cost) and step-3 (p1d, still running), and plan run
// plan-run-43 (p2). Bob has a session on plan-run-42 too (b1), and the plan
// a budget: $5, 10 calls.
func planFixture(t *testing.T) *fixture {
	f := newFixture(t)
	alice, bob, admin := f.token("acme", "alice"), f.token("acme", "bob"), f.adminToken("acme", "root")
	quarter := 0.25
	used := &streams.Usage{InputTokens: 10, OutputTokens: 20, CacheReadTokens: 300, CacheWriteTokens: 4000, ReasoningTokens: 5}
	var envs []*streams.Envelope
	envs = append(envs, planSession("p1a", "plan-run-42", "step-1", 0, "metered", used, &quarter, true)...)
	envs = append(envs, planSession("p1b", "plan-run-42", "step-2", 1, "subscription", used, nil, true)...)
	envs = append(envs, planSession("p1c", "plan-run-42", "step-1", 2, "metered", nil, nil, true)...)
	envs = append(envs, planSession("p1d", "plan-run-42", "step-3", 3, "", nil, nil, false)...)
	envs = append(envs, planSession("p2", "plan-run-43", "step-1", 4, "metered", used, &quarter, true)...)
	bobs := planSession("b1", "plan-run-42", "step-9", 5, "metered", used, &quarter, true)
	bobs[0].Owner = &streams.Owner{Org: "acme", Member: "bob"}
	for token, body := range map[string][]byte{alice: envelopes(t, envs...), bob: envelopes(t, bobs...)} {
		if code, resp := f.do("POST", "/v1/ingest", token, body); code != 207 || !bytes.Contains(resp, []byte(`"refused":0`)) {
			t.Fatalf("ingest = %d %s", code, resp)
		}
	}
	if code, resp := f.do("POST", "/v1/plans/plan-7/budget", admin, []byte(`{"dollarCeiling": 5, "loopCap": 10}`)); code != 202 {
		t.Fatalf("budget = %d %s", code, resp)
	}
	f.waitCaughtUp()
	return f
}

// A plan run traces from the top down: its steps in the order their first
// session started, each step's sessions with their router calls (tokens
// by kind, cost as reported, null when not reported or not yet ended), and
// the plan's spend, for a member their own calls without the budget.
func TestPlanRunTrace(t *testing.T) {
	f := planFixture(t)
	alice := f.token("acme", "alice")
	code, resp := f.do("GET", "/v1/provenance/plan-run-42", alice, nil)
	if code != 200 {
		t.Fatalf("trace plan-run-42 = %d %s", code, resp)
	}
	p := decode[trace.Plan](t, resp)
	if p.ID != "plan-run-42" || len(p.PlanIDs) != 1 || p.PlanIDs[0] != "plan-7" || p.Sessions != 4 || p.More || len(p.Runs) != 1 {
		t.Fatalf("trace = %s", resp)
	}
	r := p.Runs[0]
	if r.RunID != "plan-run-42" || r.Kind != trace.KindPlanRun || len(r.Steps) != 3 {
		t.Fatalf("run = %+v", r)
	}
	if got := stepSessions(r.Steps); got != "step-1:p1a,p1c step-2:p1b step-3:p1d" {
		t.Fatalf("steps = %s (bob's b1 must not show)", got)
	}
	p1a, p1c, p1b, p1d := r.Steps[0].Sessions[0], r.Steps[0].Sessions[1], r.Steps[1].Sessions[0], r.Steps[2].Sessions[0]
	if c := p1a.RouterCall; c == nil || c.Billing != "metered" || c.Tokens == nil || c.Tokens.Input != 4310 ||
		c.Tokens.CacheRead != 300 || c.Tokens.CacheWrite != 4000 || c.Tokens.Output != 20 || c.Tokens.Reasoning != 5 ||
		c.TotalCost == nil || *c.TotalCost != 0.25 || c.WorkerID != "w1" || p1a.RunID != "run-p1a" || p1a.Model != "claude-opus-4-5" || p1a.EndedAt == nil {
		t.Fatalf("p1a = %+v, call %+v", p1a, p1a.RouterCall)
	}
	if c := p1b.RouterCall; c == nil || c.Billing != "subscription" || c.Tokens == nil || c.TotalCost != nil {
		t.Fatalf("p1b's call = %+v", c)
	}
	if c := p1c.RouterCall; c == nil || c.Billing != "unknown" || c.Tokens != nil || c.TotalCost != nil {
		t.Fatalf("p1c's call = %+v", c)
	}
	if p1d.Status != "running" || p1d.RouterCall != nil || p1d.EndedAt != nil {
		t.Fatalf("p1d = %+v", p1d)
	}
	for _, null := range []string{`"tokens":null`, `"totalCost":null`, `"routerCall":null`} {
		if !bytes.Contains(resp, []byte(null)) {
			t.Errorf("trace has no %s: nothing reported is null, never 0", null)
		}
	}
	if len(p.Spend) != 1 || p.Spend[0].PlanID != "plan-7" || p.Spend[0].Member != "alice" || p.Spend[0].Calls != 4 ||
		p.Spend[0].Ceiling != nil || p.Spend[0].TokenSpentSubscription != 4330 {
		t.Fatalf("alice's spend = %s", resp)
	}

	// The steps answer of the plan run: the same steps, told a plan by kind.
	code, resp = f.do("GET", "/v1/runs/plan-run-42/steps", alice, nil)
	steps := decode[trace.PlanRunSteps](t, resp)
	if code != 200 || steps.Kind != trace.KindPlanRun || steps.RunID != "plan-run-42" || steps.Sessions != 4 || steps.More ||
		stepSessions(steps.Steps) != "step-1:p1a,p1c step-2:p1b step-3:p1d" || len(steps.PlanIDs) != 1 {
		t.Fatalf("steps of plan-run-42 = %d %s", code, resp)
	}
	_, resp = f.do("GET", "/v1/runs/run-p1a/steps", alice, nil)
	if page := decode[spine.StepsPage](t, resp); page.Kind != spine.KindSessionRecording {
		t.Fatalf("a recording run's steps = %s", resp)
	}

	// Bob's trace of the same run is his session alone.
	_, resp = f.do("GET", "/v1/runs/plan-run-42/steps", f.token("acme", "bob"), nil)
	if got := stepSessions(decode[trace.PlanRunSteps](t, resp).Steps); got != "step-9:b1" {
		t.Fatalf("bob's steps of plan-run-42 = %s", resp)
	}
}

// A plan id traces every run of the plan; an admin's trace carries the
// plan's whole spend against its budget (every member's calls), its
// sessions still the admin's own.
func TestPlanIDTraceAsAdmin(t *testing.T) {
	f := planFixture(t)
	code, resp := f.do("GET", "/v1/provenance/plan-7", f.adminToken("acme", "alice"), nil)
	p := decode[trace.Plan](t, resp)
	if code != 200 || len(p.Runs) != 2 || p.Runs[0].RunID != "plan-run-42" || p.Runs[1].RunID != "plan-run-43" || p.Sessions != 5 {
		t.Fatalf("trace plan-7 = %d %s", code, resp)
	}
	if len(p.Spend) != 1 {
		t.Fatalf("spend = %s", resp)
	}
	s := p.Spend[0]
	if s.Member != "" || s.Calls != 5 || s.Ceiling == nil || s.Ceiling.Dollars == nil || s.Ceiling.Dollars.String() != "5" ||
		s.Ceiling.Spent == nil || s.Ceiling.Spent.String() != "0.75" || s.Ceiling.MeteredCallsWithoutCost != 0 ||
		s.LoopCap == nil || s.LoopCap.Cap == nil || *s.LoopCap.Cap != 10 || s.LoopCap.Calls != 5 || s.Spend.Subscription.Calls != 1 {
		t.Fatalf("admin's spend = %s", resp)
	}
}

// Another member's plan, by run or by plan id, is a 404 byte-identical to
// a plan that does not exist, on both routes.
func TestAnotherMembersPlanIsIndistinguishableFromMissing(t *testing.T) {
	f := planFixture(t)
	carol := f.token("acme", "carol")
	other := f.token("globex", "alice") // alice's name, another org
	for _, tok := range []string{carol, other} {
		for _, pair := range [][2]string{
			{"/v1/provenance/plan-run-42", "/v1/provenance/plan-run-nope"},
			{"/v1/provenance/plan-7", "/v1/provenance/plan-nope"},
			{"/v1/runs/plan-run-42/steps", "/v1/runs/plan-run-nope/steps"},
		} {
			c1, theirs := f.do("GET", pair[0], tok, nil)
			c2, missing := f.do("GET", pair[1], tok, nil)
			if c1 != 404 || c2 != 404 || !bytes.Equal(theirs, missing) {
				t.Errorf("%s: another member's %d %q, missing %d %q", pair[0], c1, theirs, c2, missing)
			}
		}
	}
}

// stepSessions is each step's id and its sessions' ids, in order.
func stepSessions(steps []trace.PlanStep) string {
	var b bytes.Buffer
	for i, st := range steps {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(st.ID + ":")
		for j, s := range st.Sessions {
			if j > 0 {
				b.WriteByte(',')
			}
			b.WriteString(s.ID)
		}
	}
	return b.String()
}
