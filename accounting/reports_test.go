package accounting_test

import (
	"encoding/json"
	"errors"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spinehq/spine/accounting"
	"github.com/spinehq/spine/internal/spinetest"
	"github.com/spinehq/spine/streams"
)

func summary(t *testing.T, f *fixture, org string, q url.Values) *accounting.Summary {
	t.Helper()
	sq, err := accounting.ParseSummaryQuery(q, time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	s, err := accounting.Summarize(ctx, f.Pool, org, sq)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// cell is the part of a Cell a test compares; Dollars "" means null.
type cell struct {
	Calls, WithUsage, WithCost int64
	Tokens                     accounting.Tokens
	Dollars                    string
}

func flat(c accounting.Cell) cell {
	out := cell{Calls: c.Calls, WithUsage: c.CallsWithUsage, WithCost: c.CallsWithCost, Tokens: c.Tokens}
	if c.Dollars != nil {
		out.Dollars = c.Dollars.String()
	}
	return out
}

func tokens(in, out, cacheRead, cacheWrite, reasoning int64) accounting.Tokens {
	return accounting.Tokens{Input: in, Output: out, CacheRead: cacheRead, CacheWrite: cacheWrite, Reasoning: reasoning, Total: in + out}
}

func checkRow(t *testing.T, what string, got accounting.Row, metered, subscription, unknown cell) {
	t.Helper()
	for _, c := range []struct {
		name      string
		got, want cell
	}{{"metered", flat(got.Metered), metered}, {"subscription", flat(got.Subscription), subscription},
		{"unknown", flat(got.Unknown), unknown}} {
		if c.got != c.want {
			t.Errorf("%s %s:\n got %+v\nwant %+v", what, c.name, c.got, c.want)
		}
	}
}

// The mixed fixture (testdata/accounting/mixed.jsonl), by hand. Org acme:
//
//	s1 2026-11-02 alice claude-code p1 metered       in 100+1000+200=1300 out 50  cr 1000 cw 200       $0.25
//	s2 2026-11-02 alice claude-code p1 subscription  in 10 out 5                                        $0.05
//	s3 2026-11-03 bob   codex       p1 metered       in 400+100=500 out 300 cr 100 reasoning 120        no cost
//	s4 2026-11-03 bob   codex       -  unknown (no usage report)                                         no cost
//	s5 2026-11-03 alice claude-code p2 unknown (no billing signal)  in 20+50=70 out 80 cw 50            $1.5
//	s6 2026-11-04 alice claude-code p2 unknown (worker w3 disconnected)                                  no cost
//	s7 2026-11-10 bob   claude-code -  subscription  in 5 out 0                                         $0 (reported)
//	s8 2026-11-10 alice codex       p1 metered       in 1000 out 500                                    $0.75
//
// globex's session and the end with no start are in no acme report.
func TestSummaryOfTheMixedFixture(t *testing.T) {
	f := newFixture(t)
	f.publish(spinetest.ReadEnvelopes(t, "../testdata/accounting/mixed.jsonl")...)
	f.wait()
	none := cell{}
	all := url.Values{"from": {"2026-11-01"}, "to": {"2026-11-30"}}

	s := summary(t, f, "acme", url.Values{"from": {"2026-11-01"}, "to": {"2026-11-30"}, "groupBy": {"day"}})
	checkRow(t, "total", s.Total,
		cell{3, 3, 2, tokens(2800, 850, 1100, 200, 120), "1.00"},
		cell{2, 2, 2, tokens(15, 5, 0, 0, 0), "0.05"},
		cell{3, 1, 1, tokens(70, 80, 0, 50, 0), "1.5"})
	days := map[string]accounting.Row{}
	for _, r := range s.Rows {
		days[r.Key] = r
	}
	if len(s.Rows) != 4 {
		t.Fatalf("days %v, want 2026-11-02, 03, 04, 10", s.Rows)
	}
	checkRow(t, "2026-11-02", days["2026-11-02"], cell{1, 1, 1, tokens(1300, 50, 1000, 200, 0), "0.25"},
		cell{1, 1, 1, tokens(10, 5, 0, 0, 0), "0.05"}, none)
	checkRow(t, "2026-11-03", days["2026-11-03"], cell{1, 1, 0, tokens(500, 300, 100, 0, 120), ""},
		none, cell{2, 1, 1, tokens(70, 80, 0, 50, 0), "1.5"})
	checkRow(t, "2026-11-04", days["2026-11-04"], none, none, cell{1, 0, 0, accounting.Tokens{}, ""})
	checkRow(t, "2026-11-10", days["2026-11-10"], cell{1, 1, 1, tokens(1000, 500, 0, 0, 0), "0.75"},
		cell{1, 1, 1, tokens(5, 0, 0, 0, 0), "0"}, none)

	keys := func(groupBy string) map[string]accounting.Row {
		q := url.Values{"from": all["from"], "to": all["to"], "groupBy": {groupBy}}
		out := map[string]accounting.Row{}
		for _, r := range summary(t, f, "acme", q).Rows {
			out[r.Key] = r
		}
		return out
	}
	weeks := keys("week")
	checkRow(t, "week of 2026-11-09", weeks["2026-11-09"], cell{1, 1, 1, tokens(1000, 500, 0, 0, 0), "0.75"},
		cell{1, 1, 1, tokens(5, 0, 0, 0, 0), "0"}, none)
	if len(weeks) != 2 || len(keys("month")) != 1 {
		t.Fatalf("weeks %v", weeks)
	}
	members := keys("member")
	checkRow(t, "bob", members["bob"], cell{1, 1, 0, tokens(500, 300, 100, 0, 120), ""},
		cell{1, 1, 1, tokens(5, 0, 0, 0, 0), "0"}, cell{1, 0, 0, accounting.Tokens{}, ""})
	models := keys("model")
	checkRow(t, "unreported model", models[""], none, cell{1, 1, 1, tokens(5, 0, 0, 0, 0), "0"},
		cell{1, 0, 0, accounting.Tokens{}, ""})
	checkRow(t, "gpt-5-codex", models["gpt-5-codex"], cell{2, 2, 1, tokens(1500, 800, 100, 0, 120), "0.75"},
		none, cell{1, 0, 0, accounting.Tokens{}, ""})
	plans := keys("plan")
	checkRow(t, "plan p2", plans["p2"], none, none, cell{2, 1, 1, tokens(70, 80, 0, 50, 0), "1.5"})
	apps := keys("app")
	checkRow(t, "codex", apps["codex"], cell{2, 2, 1, tokens(1500, 800, 100, 0, 120), "0.75"}, none,
		cell{1, 0, 0, accounting.Tokens{}, ""})
	billing := keys("billing")
	if len(billing) != 3 || billing["unknown"].Unknown.Calls != 3 || billing["unknown"].Metered.Calls != 0 {
		t.Fatalf("by billing: %+v", billing)
	}
	// globex sees only its own call.
	g := summary(t, f, "globex", all)
	checkRow(t, "globex total", g.Total, cell{1, 1, 1, tokens(1, 1, 0, 0, 0), "9.99"}, none, none)
	// A narrower window: [2026-11-03T08:00, 2026-11-03T12:00) holds s3 and s4; s5 ends at 12:00.
	w := summary(t, f, "acme", url.Values{"from": {"2026-11-03T08:00:00Z"}, "to": {"2026-11-03T12:00:00Z"}})
	if w.Total.Metered.Calls != 1 || w.Total.Unknown.Calls != 1 || w.Total.Subscription.Calls != 0 {
		t.Fatalf("window: %+v", w.Total)
	}
}

// A cost nobody reported is NULL in the row and null in every report; a
// reported 0 stays 0.
func TestNullCostStaysNull(t *testing.T) {
	f := newFixture(t)
	silent := spinetest.End("silent", "done", "m", "")
	silent.Usage, silent.Billing = usage(10, 10, 0, 0), "metered"
	zero := spinetest.End("zero", "done", "m", "")
	zero.Usage, zero.Billing, zero.TotalCost = usage(10, 10, 0, 0), "subscription", ptr(0.0)
	for _, id := range []string{"silent", "zero"} {
		st := spinetest.Start(id)
		st.PlanID = "p"
		f.publish(st)
	}
	f.publish(silent, zero)
	f.wait()
	if got := f.calls("silent"); got[0].Cost != nil {
		t.Fatalf("silent cost stored as %v", *got[0].Cost)
	}
	if got := f.calls("zero"); got[0].Cost == nil || *got[0].Cost != "0" {
		t.Fatalf("reported zero stored as %v", got[0].Cost)
	}
	s := summary(t, f, "acme", url.Values{"from": {"2026-11-01"}, "to": {"2026-11-02"}, "groupBy": {"plan"}})
	for _, r := range append(s.Rows, s.Total) {
		if r.Metered.Dollars != nil || r.Metered.CallsWithCost != 0 || r.Metered.Calls != 1 {
			t.Fatalf("%s: metered dollars %v, want null", r.Key, r.Metered.Dollars)
		}
		if r.Subscription.Dollars == nil || r.Subscription.Dollars.String() != "0" {
			t.Fatalf("%s: subscription dollars %v, want 0", r.Key, r.Subscription.Dollars)
		}
	}
	body, _ := json.Marshal(s.Total)
	if want := `"metered":{"calls":1,"callsWithUsage":1,"callsWithCost":0,"tokens":{"input":10,"output":10,"cacheRead":0,"cacheWrite":0,"reasoning":0,"total":20},"dollars":null}`; !strings.Contains(string(body), want) {
		t.Fatalf("JSON %s lacks %s", body, want)
	}
	// The plan's one metered call reported no cost: its metered spend is
	// not reported (null, with a note), never $0, and so neither is what
	// remains of a ceiling nor whether it is reached.
	f.budget(budget("bp", "p", "5", nil))
	f.wait()
	p, err := accounting.GetPlanSpend(ctx, f.Pool, "acme", "p", "")
	if err != nil {
		t.Fatal(err)
	}
	c := p.Ceiling
	if p.Spend.Metered.Dollars != nil || c.Spent != nil || c.Remaining != nil || c.Reached != nil ||
		c.MeteredCallsWithoutCost != 1 || c.Note != "no cost reported for any of the plan's 1 metered call" || num(c.Dollars) != "5" {
		t.Fatalf("plan ceiling %+v (note %q)", c, c.Note)
	}
	body, _ = json.Marshal(c)
	if want := `{"dollars":5,"spent":null,"remaining":null,"reached":null,"meteredCallsWithoutCost":1,"note":"no cost reported for any of the plan's 1 metered call"}`; string(body) != want {
		t.Fatalf("ceiling JSON %s\nwant %s", body, want)
	}
}

// num is a decimal's text, "null" for nil.
func num(n *json.Number) string {
	if n == nil {
		return "null"
	}
	return n.String()
}

func budget(id, plan string, ceiling string, loopCap *int64) *accounting.Budget {
	b := &accounting.Budget{V: 1, Type: accounting.TypePlanBudget, ID: id, At: spinetest.T0, PlanID: plan,
		Org: "acme", Member: "alice", LoopCap: loopCap}
	if ceiling != "" {
		n := accounting.Dollars(ceiling)
		b.DollarCeiling = &n
	}
	return b
}

// Plan p1 of the mixed fixture: metered $0.25 + $0.75 (and one metered call
// with no cost), subscription $0.05, all against a $1.00 ceiling and a cap
// of 5 calls. Subscription dollars never count against the ceiling; every
// call counts against the cap.
func TestPlanCeilingsWithMixedCalls(t *testing.T) {
	f := newFixture(t)
	f.publish(spinetest.ReadEnvelopes(t, "../testdata/accounting/mixed.jsonl")...)
	f.budget(budget("b1", "p1", "1.00", ptr(int64(5))))
	f.budget(budget("b2", "p2", "", nil))
	f.wait()
	p, err := accounting.GetPlanSpend(ctx, f.Pool, "acme", "p1", "")
	if err != nil {
		t.Fatal(err)
	}
	if p.TokenSpent != 1350+800+1500 || p.TokenSpentSubscription != 15 || p.TokenSpentUnknown != 0 || p.Calls != 4 {
		t.Fatalf("p1 tokens %d / %d / %d, calls %d", p.TokenSpent, p.TokenSpentSubscription, p.TokenSpentUnknown, p.Calls)
	}
	c := p.Ceiling
	if num(c.Dollars) != "1.00" || num(c.Spent) != "1.00" || num(c.Remaining) != "0.00" || c.Reached == nil ||
		!*c.Reached || c.MeteredCallsWithoutCost != 1 || c.Note != "a lower bound: 1 of the plan's 3 metered calls reported no cost" {
		t.Fatalf("p1 ceiling %+v (note %q)", c, c.Note)
	}
	if l := p.LoopCap; *l.Cap != 5 || l.Calls != 4 || *l.Remaining != 1 || l.Reached {
		t.Fatalf("p1 loop cap %+v", l)
	}
	if p.Spend.Subscription.Dollars.String() != "0.05" || p.BudgetSetBy != "alice" {
		t.Fatalf("p1 %+v", p)
	}
	// A higher ceiling: the same spend is no longer at it. A cap of 4 is reached.
	f.budget(budget("b3", "p1", "2.5", ptr(int64(4))))
	f.wait()
	p, _ = accounting.GetPlanSpend(ctx, f.Pool, "acme", "p1", "")
	if *p.Ceiling.Reached || num(p.Ceiling.Remaining) != "1.50" || !p.LoopCap.Reached || *p.LoopCap.Remaining != 0 {
		t.Fatalf("p1 after the new budget: ceiling %+v cap %+v", p.Ceiling, p.LoopCap)
	}
	// p2 has only unknown-billed calls ($1.5 reported): nothing metered, so
	// its metered spend is a known 0.
	p2, err := accounting.GetPlanSpend(ctx, f.Pool, "acme", "p2", "")
	if err != nil {
		t.Fatal(err)
	}
	if p2.Ceiling.Dollars != nil || num(p2.Ceiling.Spent) != "0" || p2.Ceiling.Note != "" || p2.Ceiling.Reached != nil ||
		p2.LoopCap.Cap != nil || p2.Calls != 2 ||
		p2.Spend.Unknown.Dollars.String() != "1.5" || p2.TokenSpentUnknown != 150 {
		t.Fatalf("p2 %+v", p2)
	}
	// Plans are per org; a plan with neither calls nor budget is not found.
	for _, c := range []struct{ org, plan string }{{"globex", "p2"}, {"acme", "nope"}} {
		if _, err := accounting.GetPlanSpend(ctx, f.Pool, c.org, c.plan, ""); !errors.Is(err, accounting.ErrNotFound) {
			t.Fatalf("%s/%s: %v, want ErrNotFound", c.org, c.plan, err)
		}
	}
	if g, _ := accounting.GetPlanSpend(ctx, f.Pool, "globex", "p1", ""); g.Calls != 1 || num(g.Ceiling.Spent) != "9.99" || g.Ceiling.Note != "" {
		t.Fatalf("globex p1 %+v", g)
	}
}

// A plan.budget that breaks a rule is dead-lettered with its reason; the
// rest of the stream goes on.
func TestBadBudgetIsDeadLettered(t *testing.T) {
	f := newFixture(t)
	for _, c := range []struct{ subject, data string }{
		{accounting.PlanSubject("p1"), `{"v":1,"type":"plan.budget","id":"x1","at":"2026-11-01T00:00:00Z","planId":"p1","org":"acme","member":"a","dollarCeiling":-1}`},
		{accounting.PlanSubject("p2"), `{"v":1,"type":"plan.budget","id":"x2","at":"2026-11-01T00:00:00Z","planId":"p1","org":"acme","member":"a"}`},
		{accounting.PlanSubject("p3"), `{not json`},
		// A float reads this as 0, but numeric cannot hold it: refused
		// before it reaches PostgreSQL, never "unstorable".
		{accounting.PlanSubject("p5"), `{"v":1,"type":"plan.budget","id":"x5","at":"2026-11-01T00:00:00Z","planId":"p5","org":"acme","member":"a","dollarCeiling":1e-20000}`},
	} {
		ack, err := f.JS.Publish(ctx, c.subject, []byte(c.data))
		if err != nil {
			t.Fatal(err)
		}
		f.saw(ack.Sequence)
	}
	f.budget(budget("ok", "p4", "3.000001", nil))
	f.wait()
	rows, err := f.Pool.Query(ctx, `SELECT reason FROM dead_letters ORDER BY seq`)
	if err != nil {
		t.Fatal(err)
	}
	var reasons []string
	for rows.Next() {
		var r string
		_ = rows.Scan(&r)
		reasons = append(reasons, r)
	}
	want := []string{streams.ReasonInvalidField, streams.ReasonSubject, streams.ReasonMalformed, streams.ReasonInvalidField}
	if !slices.Equal(reasons, want) {
		t.Fatalf("dead letters %v, want %v", reasons, want)
	}
	if n := f.count(`SELECT count(*) FROM plan_budgets`); n != 1 {
		t.Fatalf("%d budgets, want the one good one", n)
	}
	if n := f.count(`SELECT count(*) FROM plan_budgets WHERE dollar_ceiling::text = '3.000001'`); n != 1 {
		t.Fatal("the ceiling is not stored as written")
	}
}

func TestParseSummaryQuery(t *testing.T) {
	now := time.Date(2026, 11, 15, 12, 0, 0, 0, time.UTC)
	q, err := accounting.ParseSummaryQuery(url.Values{}, now)
	if err != nil || q.GroupBy != "day" || !q.To.Equal(now) || !q.From.Equal(now.AddDate(0, 0, -30)) {
		t.Fatalf("defaults: %+v %v", q, err)
	}
	q, err = accounting.ParseSummaryQuery(url.Values{"from": {"2026-11-01"}, "to": {"2026-11-01"}}, now)
	if err != nil || q.To.Sub(q.From) != 24*time.Hour {
		t.Fatalf("a date as to includes its day: %+v %v", q, err)
	}
	q, err = accounting.ParseSummaryQuery(url.Values{"groupBy": {"session"}, "limit": {"100"}, "after": {""}}, now)
	if err != nil || q.Limit != 100 || q.After == nil || *q.After != "" {
		t.Fatalf("limit and an empty after: %+v %v", q, err)
	}
	if q, err = accounting.ParseSummaryQuery(url.Values{}, now); q.Limit != 0 || q.After != nil {
		t.Fatalf("no limit or after: %+v %v", q, err)
	}
	for _, bad := range []url.Values{{"groupBy": {"hour"}}, {"from": {"yesterday"}}, {"from": {"2026-11-02"}, "to": {"2026-11-01"}},
		{"from": {"1990-01-01"}}, {"limit": {"0"}}, {"limit": {"-1"}}, {"limit": {"10001"}}, {"limit": {"ten"}},
		{"limit": {""}}, {"limit": {"1.5"}}, {"after": {"a\x00b"}}, {"after": {"\xff"}},
		{"after": {strings.Repeat("k", accounting.MaxAfterBytes+1)}}} {
		if _, err := accounting.ParseSummaryQuery(bad, now); !errors.Is(err, accounting.ErrBadQuery) {
			t.Errorf("%v: %v, want ErrBadQuery", bad, err)
		}
	}
}
