package node_test

import (
	"bytes"
	"io"
	"maps"
	"net/http"
	"strings"
	"testing"

	"github.com/spinehq/spine/accounting"
	"github.com/spinehq/spine/internal/spinetest"
	"github.com/spinehq/spine/streams"
)

// answer404 is a response as a caller sees it: status, headers but Date,
// and body.
type answer404 struct {
	code   int
	header http.Header
	body   []byte
}

func (a answer404) same(b answer404) bool {
	return a.code == b.code && bytes.Equal(a.body, b.body) && maps.EqualFunc(a.header, b.header,
		func(x, y []string) bool { return strings.Join(x, "\n") == strings.Join(y, "\n") })
}

// doFull is do with the response's headers (Date left out: it is the
// clock's, not the answer's).
func (f *costFixture) doFull(method, path, token string, body []byte) answer404 {
	f.t.Helper()
	req, err := http.NewRequest(method, f.base+path, bytes.NewReader(body))
	if err != nil {
		f.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		f.t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	resp.Header.Del("Date")
	return answer404{code: resp.StatusCode, header: resp.Header, body: data}
}

func TestPlanRoles(t *testing.T) {
	f := newCostFixture(t)
	f.publishFile("../testdata/accounting/mixed.jsonl")
	admin := f.adminToken("acme", "ada")
	alice, bob, mallory := f.token("acme", "alice"), f.token("acme", "bob"), f.token("acme", "mallory")
	missing := f.doFull("GET", "/v1/plans/nope/spend", admin, nil)

	code, body := f.do("POST", "/v1/plans/p1/budget", admin, []byte(`{"dollarCeiling": 3, "loopCap": 9}`))
	if code != 202 {
		t.Fatalf("admin setting p1's budget = %d %s", code, body)
	}
	f.waitFor(decode[struct{ Seq uint64 }](t, body).Seq)

	// Only an admin sets a budget: a member whose sessions carry the plan
	// is told an admin is needed, and the budget stays the admin's.
	code, body = f.do("POST", "/v1/plans/p1/budget", bob, []byte(`{"dollarCeiling": 1000000}`))
	if code != 403 || !bytes.Contains(body, []byte(`"code":"admin_required"`)) {
		t.Fatalf("bob overwriting p1's budget = %d %s, want 403 admin_required", code, body)
	}
	code, body = f.do("GET", "/v1/plans/p1/spend", admin, nil)
	p := decode[accounting.PlanSpend](t, body)
	if code != 200 || p.Member != "" || p.Calls != 4 || p.BudgetSetBy != "ada" || p.Ceiling.Dollars.String() != "3" || *p.LoopCap.Cap != 9 {
		t.Fatalf("the admin's p1 spend = %d %s", code, body)
	}
	// A member sees their own calls on the plan, and not the budget: its
	// standing counts everyone's calls.
	for _, c := range []struct {
		token, member string
		calls         int64
	}{{alice, "alice", 3}, {bob, "bob", 1}} {
		code, body = f.do("GET", "/v1/plans/p1/spend", c.token, nil)
		p := decode[accounting.PlanSpend](t, body)
		if code != 200 || p.Member != c.member || p.Calls != c.calls || p.Ceiling != nil || p.LoopCap != nil ||
			p.BudgetSetBy != "" || bytes.Contains(body, []byte(`"ceiling"`)) {
			t.Fatalf("%s's p1 spend = %d %s, want %d calls of their own and no budget", c.member, code, body, c.calls)
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
		got := f.doFull(c.method, c.path, c.token, []byte(`{"loopCap": 1}`))
		if got.code != 404 || !got.same(missing) {
			t.Errorf("%s = %d %v %s, want the 404 of a missing plan %v %s", c.name, got.code, got.header, got.body,
				missing.header, missing.body)
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
	if got := f.doFull("GET", "/v1/plans/p7/spend", alice, nil); !got.same(missing) {
		t.Fatalf("alice reading p7 = %d %v %s", got.code, got.header, got.body)
	}
}

// A forged planId shows only the forger's own calls: a session's planId is
// the producer's word, so bob starts and ends a session "on" alice's plan
// p2 through /v1/ingest.
// That earns him his own call on p2, never alice's two.
func TestForgedPlanShowsOnlyOwnCalls(t *testing.T) {
	f := newCostFixture(t)
	f.publishFile("../testdata/accounting/mixed.jsonl")
	bob, admin := f.token("acme", "bob"), f.adminToken("acme", "ada")
	start, end := spinetest.Start("bob-on-p2"), spinetest.End("bob-on-p2", "done", "claude-sonnet-4-5", "")
	start.PlanID, end.Billing, end.Usage = "p2", "metered", &streams.Usage{InputTokens: 7, OutputTokens: 1}
	if r := f.ingest(bob, start, end); r.Accepted != 2 {
		t.Fatalf("bob's forged session = %+v", r)
	}
	f.waitFor(f.sessionsLastSeq())

	code, body := f.do("GET", "/v1/plans/p2/spend", bob, nil)
	p := decode[accounting.PlanSpend](t, body)
	if code != 200 || p.Member != "bob" || p.Calls != 1 || p.TokenSpent != 8 || p.TokenSpentUnknown != 0 {
		t.Fatalf("bob reading p2 = %d %s, want his one call only", code, body)
	}
	if code, body = f.do("GET", "/v1/plans/p2/spend", admin, nil); code != 200 || decode[accounting.PlanSpend](t, body).Calls != 3 {
		t.Fatalf("the admin reading p2 = %d %s, want alice's two calls and bob's", code, body)
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
