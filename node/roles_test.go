package node_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/spinehq/spine/accounting"
)

// In the mixed fixture alice's sessions carry p1 and p2, bob's only p1, and
// mallory has none. A member reads the spend of the plans their sessions
// carry and sets no budget; an admin reads every plan of the org and sets
// budgets; any other plan is the 404 of a plan that does not exist.
func TestPlanRoles(t *testing.T) {
	f := newCostFixture(t)
	f.publishFile("../testdata/accounting/mixed.jsonl")
	admin := f.adminToken("acme", "ada")
	alice, bob, mallory := f.token("acme", "alice"), f.token("acme", "bob"), f.token("acme", "mallory")
	_, missing := f.do("GET", "/v1/plans/nope/spend", admin, nil)

	code, body := f.do("POST", "/v1/plans/p1/budget", admin, []byte(`{"dollarCeiling": 3, "loopCap": 9}`))
	if code != 202 {
		t.Fatalf("admin setting p1's budget = %d %s", code, body)
	}
	f.waitFor(decode[struct{ Seq uint64 }](t, body).Seq)

	// The red team's overwrite: a member whose sessions carry the plan is
	// told an admin is needed, and the budget stays the admin's.
	code, body = f.do("POST", "/v1/plans/p1/budget", bob, []byte(`{"dollarCeiling": 1000000}`))
	if code != 403 || !bytes.Contains(body, []byte(`"code":"admin_required"`)) {
		t.Fatalf("bob overwriting p1's budget = %d %s, want 403 admin_required", code, body)
	}
	for _, who := range []string{alice, bob, admin} {
		code, body = f.do("GET", "/v1/plans/p1/spend", who, nil)
		p := decode[accounting.PlanSpend](t, body)
		if code != 200 || p.BudgetSetBy != "ada" || p.Ceiling.Dollars.String() != "3" || *p.LoopCap.Cap != 9 {
			t.Fatalf("p1 spend = %d %s", code, body)
		}
	}

	// Plans the member's sessions do not carry: reads and writes are the
	// bytes of a plan that does not exist.
	for _, c := range []struct {
		name, method, path, token string
	}{
		{"bob reading p2", "GET", "/v1/plans/p2/spend", bob},
		{"bob setting p2", "POST", "/v1/plans/p2/budget", bob},
		{"mallory reading p1", "GET", "/v1/plans/p1/spend", mallory},
		{"mallory setting p1", "POST", "/v1/plans/p1/budget", mallory},
		{"alice reading a plan nobody has", "GET", "/v1/plans/nope/spend", alice},
		{"alice setting a plan nobody has", "POST", "/v1/plans/nope/budget", alice},
	} {
		code, body := f.do(c.method, c.path, c.token, []byte(`{"loopCap": 1}`))
		if code != 404 || !bytes.Equal(body, missing) {
			t.Errorf("%s = %d %s, want the 404 of a missing plan %s", c.name, code, body, missing)
		}
	}

	// An admin reads any plan and may budget one nobody has used yet, which
	// stays invisible to members until their sessions carry it.
	if code, body := f.do("GET", "/v1/plans/p2/spend", admin, nil); code != 200 {
		t.Fatalf("admin reading p2 = %d %s", code, body)
	}
	code, body = f.do("POST", "/v1/plans/p7/budget", admin, []byte(`{"loopCap": 2}`))
	if code != 202 {
		t.Fatalf("admin budgeting p7 = %d %s", code, body)
	}
	f.waitFor(decode[struct{ Seq uint64 }](t, body).Seq)
	if code, body := f.do("GET", "/v1/plans/p7/spend", admin, nil); code != 200 {
		t.Fatalf("admin reading p7 = %d %s", code, body)
	}
	if code, body := f.do("GET", "/v1/plans/p7/spend", alice, nil); code != 404 || !bytes.Equal(body, missing) {
		t.Fatalf("alice reading p7 = %d %s", code, body)
	}
}

// A member's cost summary counts their own calls; an admin's the org's.
func TestCostSummaryScope(t *testing.T) {
	f := newCostFixture(t)
	f.publishFile("../testdata/accounting/mixed.jsonl")
	const q = "/v1/cost/summary?from=2026-11-01&to=2026-11-30&groupBy="
	keys := func(token, groupBy string) (string, []string) {
		t.Helper()
		code, body := f.do("GET", q+groupBy, token, nil)
		s := decode[accounting.Summary](t, body)
		if code != 200 {
			t.Fatalf("summary by %s = %d %s", groupBy, code, body)
		}
		var ks []string
		for _, r := range s.Rows {
			ks = append(ks, r.Key)
		}
		return s.Member, ks
	}
	alice, bob, admin := f.token("acme", "alice"), f.token("acme", "bob"), f.adminToken("acme", "ada")
	for _, c := range []struct {
		token, groupBy, member, want string
	}{
		{alice, "member", "alice", "alice"},
		{bob, "member", "bob", "bob"},
		{admin, "member", "", "alice bob"},
		{alice, "session", "alice", "acc-s1 acc-s2 acc-s5 acc-s6 acc-s8"},
		{bob, "session", "bob", "acc-s3 acc-s4 acc-s7"},
		{bob, "plan", "bob", " p1"},
		{admin, "plan", "", " p1 p2"},
	} {
		member, ks := keys(c.token, c.groupBy)
		if got := strings.Join(ks, " "); member != c.member || got != c.want {
			t.Errorf("%s's summary by %s: member %q, rows %q; want %q, %q", c.member, c.groupBy, member, got, c.member, c.want)
		}
	}
	code, page := f.do("GET", "/ui/cost?from=2026-11-01&to=2026-11-30", bob, nil)
	if code != 200 || !strings.Contains(string(page), "Only the calls of bob") {
		t.Fatalf("bob's cost page = %d %s", code, page)
	}
	if _, page = f.do("GET", "/ui/cost?from=2026-11-01&to=2026-11-30", admin, nil); strings.Contains(string(page), "Only the calls of") {
		t.Fatalf("the admin's cost page is scoped to a member")
	}
}
