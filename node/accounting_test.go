package node_test

import (
	"bytes"
	"context"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spinehq/spine/accounting"
	"github.com/spinehq/spine/internal/config"
	"github.com/spinehq/spine/internal/pgtest"
	"github.com/spinehq/spine/internal/spinetest"
	"github.com/spinehq/spine/node"
	"github.com/spinehq/spine/streams"
)

// costFixture is a node whose accounting projector signals each commit.
type costFixture struct {
	*fixture
	acct *streams.Projector
}

func newCostFixture(t *testing.T) *costFixture { return newCostFixtureWith(t, nil) }

// newCostFixtureWith is newCostFixture with edit applied to the accounting
// projector's config before it starts.
func newCostFixtureWith(t *testing.T, edit func(*streams.ProjectorConfig)) *costFixture {
	t.Helper()
	_, url := pgtest.New(t)
	cfg := config.Config{DatabaseURL: url, NATSListen: "off", HTTPAddr: "127.0.0.1:0", DataDir: t.TempDir(),
		TokenSecret: secret, Replicas: 1}
	n, err := node.Start(context.Background(), cfg, spinetest.Logger(t), &node.Options{NoProjectors: true})
	if err != nil {
		t.Fatalf("start node: %v", err)
	}
	t.Cleanup(n.Stop)
	f := &costFixture{fixture: &fixture{t: t, n: n, base: "http://" + n.HTTPAddr(), commits: make(chan struct{}, 1), cfg: cfg}}
	a := accounting.New(accounting.Config{Registerer: n.Registry})
	pc := streams.ProjectorConfig{Name: accounting.ProjectorName,
		Stream: streams.StreamSessions, Filter: accounting.Subjects(), Handler: a,
		OnCommit: func(last uint64, msgs []streams.Message) {
			a.Committed(last, msgs)
			select {
			case f.commits <- struct{}{}:
			default:
			}
		}}
	if edit != nil {
		edit(&pc)
	}
	f.acct, err = n.StartProjector(context.Background(), pc)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// waitFor blocks until accounting has committed stream sequence seq.
func (f *costFixture) waitFor(seq uint64) {
	f.t.Helper()
	deadline := time.After(spinetest.WaitTimeout)
	for f.acct.Checkpoint() < seq {
		select {
		case <-f.commits:
		case <-deadline:
			f.t.Fatalf("accounting at %d, want %d", f.acct.Checkpoint(), seq)
		}
	}
}

// publishFile publishes a fixture as a trusted NATS producer and waits for
// accounting to apply it.
func (f *costFixture) publishFile(name string) {
	f.t.Helper()
	var last uint64
	for _, e := range spinetest.ReadEnvelopes(f.t, name) {
		ack, err := f.n.Publisher.Publish(context.Background(), e, nil)
		if err != nil {
			f.t.Fatal(err)
		}
		last = ack.Sequence
	}
	f.waitFor(last)
}

func TestCostRoutes(t *testing.T) {
	f := newCostFixture(t)
	f.publishFile("../testdata/accounting/mixed.jsonl")
	// Org-wide reports and budgets are an admin's (TestPlanRoles has a member's).
	alice, carol := f.adminToken("acme", "alice"), f.adminToken("globex", "carol")

	code, body := f.do("GET", "/v1/cost/summary?from=2026-11-01&to=2026-11-30&groupBy=billing", alice, nil)
	s := decode[accounting.Summary](t, body)
	if code != 200 || len(s.Rows) != 3 || s.Total.Metered.Dollars.String() != "1.00" || s.Total.Unknown.Calls != 3 ||
		s.Org != "acme" {
		t.Fatalf("summary = %d %s", code, body)
	}
	if !bytes.Contains(body, []byte(`"callsWithCost":0,"tokens":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"reasoning":0,"total":0},"dollars":null`)) {
		t.Fatalf("a cell nobody priced must say dollars null: %s", body)
	}
	_, body = f.do("GET", "/v1/cost/summary?from=2026-11-01&to=2026-11-30", carol, nil)
	if g := decode[accounting.Summary](t, body); g.Total.Metered.Calls != 1 || g.Total.Metered.Dollars.String() != "9.99" {
		t.Fatalf("globex summary = %s", body)
	}
	for _, q := range []string{"groupBy=hour", "from=last-week", "from=2026-11-05&to=2026-11-01"} {
		if code, body := f.do("GET", "/v1/cost/summary?"+q, alice, nil); code != 400 || !bytes.Contains(body, []byte(`"code":"bad_request"`)) {
			t.Errorf("%s = %d %s", q, code, body)
		}
	}
	if code, _ := f.do("GET", "/v1/cost/summary", "", nil); code != 401 {
		t.Fatalf("no token = %d", code)
	}

	// A plan of another org is the same 404 as one that does not exist.
	_, missing := f.do("GET", "/v1/plans/nope/spend", alice, nil)
	code, other := f.do("GET", "/v1/plans/p2/spend", carol, nil)
	if code != 404 || !bytes.Equal(missing, other) {
		t.Fatalf("globex reading acme's p2 = %d %s, missing = %s", code, other, missing)
	}
	code, body = f.do("POST", "/v1/plans/p1/budget", alice, []byte(`{"dollarCeiling": 1.00, "loopCap": 5}`))
	if code != 202 {
		t.Fatalf("set budget = %d %s", code, body)
	}
	f.waitFor(decode[struct{ Seq uint64 }](t, body).Seq)
	code, body = f.do("GET", "/v1/plans/p1/spend", alice, nil)
	p := decode[accounting.PlanSpend](t, body)
	if code != 200 || p.Ceiling.Reached == nil || !*p.Ceiling.Reached || p.Ceiling.Spent.String() != "1.00" || *p.LoopCap.Remaining != 1 ||
		p.TokenSpent != 3650 || p.TokenSpentSubscription != 15 || p.BudgetSetBy != "alice" {
		t.Fatalf("spend = %d %s", code, body)
	}
	for _, bad := range []string{`{"dollarCeiling": -1}`, `{"loopCap": -2}`, `{"dollarCeiling": 1, "producedBy": "x"}`,
		`{"dollarCeiling": "lots"}`, `[]`, `{} {}`} {
		if code, body := f.do("POST", "/v1/plans/p1/budget", alice, []byte(bad)); code != 400 {
			t.Errorf("budget %s = %d %s", bad, code, body)
		}
	}
	// A ceiling is a JSON number: "10" is refused, never read as 10.
	if code, body := f.do("POST", "/v1/plans/p1/budget", alice, []byte(`{"dollarCeiling": "10"}`)); code != 400 ||
		!bytes.Contains(body, []byte(`"code":"wrong_field_type"`)) {
		t.Errorf(`budget {"dollarCeiling": "10"} = %d %s, want 400 wrong_field_type`, code, body)
	}
	// Only plain decimals numeric stores exactly: a float reads 1e-20000 as
	// 0, numeric cannot hold it, and the member would have had a 202.
	for _, bad := range []string{`1e-20000`, `1e3`, `0.0000001`, `1000000000000`} {
		code, body := f.do("POST", "/v1/plans/p1/budget", alice, []byte(`{"dollarCeiling": `+bad+`}`))
		if code != 400 || !bytes.Contains(body, []byte(`"code":"invalid_field"`)) {
			t.Errorf("budget dollarCeiling %s = %d %s, want 400 invalid_field", bad, code, body)
		}
	}
	if code, body := f.do("POST", "/v1/plans/bad.id/budget", alice, []byte(`{}`)); code != 400 {
		t.Errorf("bad plan id = %d %s", code, body)
	}

	_, metrics := f.do("GET", "/metrics", "", nil)
	for _, m := range []string{
		`spine_accounting_calls_total{app="codex",billing="metered",door="session",model="gpt-5-codex"} 1`,
		`spine_accounting_reported_dollars_total{app="claude-code",billing="unknown",door="session",model="claude-opus-4-1"} 1.5`,
		`spine_accounting_calls_without_cost_total{app="claude-code",billing="unknown",door="unknown",model="unknown"} 1`,
		`spine_accounting_tokens_total{app="claude-code",billing="metered",door="session",kind="input",model="claude-sonnet-4-5"} 1301`,
	} {
		if !bytes.Contains(metrics, []byte(m)) {
			t.Errorf("/metrics lacks %s", m)
		}
	}
}

// groupBy=session pages with limit and after; next is the cursor, absent
// on the last page; every page carries the whole window's total.
func TestCostSummaryPages(t *testing.T) {
	f := newCostFixture(t)
	f.publishFile("../testdata/accounting/mixed.jsonl")
	alice := f.adminToken("acme", "alice") // the org's whole listing
	const base = "/v1/cost/summary?from=2026-11-01&to=2026-11-30&groupBy=session"
	var keys []string
	after := ""
	for page := 0; page < 4; page++ {
		code, body := f.do("GET", base+"&limit=3"+after, alice, nil)
		s := decode[accounting.Summary](t, body)
		if code != 200 || s.Total.Metered.Calls != 3 || s.Total.Unknown.Calls != 3 {
			t.Fatalf("page %d = %d %s", page, code, body)
		}
		for _, r := range s.Rows {
			keys = append(keys, r.Key)
		}
		if s.Next == nil {
			break
		}
		if len(s.Rows) != 3 || *s.Next != s.Rows[2].Key {
			t.Fatalf("page %d: next %q after %d rows: %s", page, *s.Next, len(s.Rows), body)
		}
		after = "&after=" + url.QueryEscape(*s.Next)
	}
	want := []string{"acc-s1", "acc-s2", "acc-s3", "acc-s4", "acc-s5", "acc-s6", "acc-s7", "acc-s8"}
	if !slices.Equal(keys, want) {
		t.Fatalf("pages listed %v, want %v", keys, want)
	}
	if _, body := f.do("GET", base, alice, nil); bytes.Contains(body, []byte(`"next"`)) {
		t.Fatalf("a listing without limit has no next: %s", body)
	}
	for _, q := range []string{"limit=0", "limit=10001", "limit=many", "after=%FF"} {
		code, body := f.do("GET", base+"&"+q, alice, nil)
		if code != 400 || !bytes.Contains(body, []byte(`"code":"bad_request"`)) || !bytes.Contains(body, []byte(strings.SplitN(q, "=", 2)[0])) {
			t.Errorf("%s = %d %s", q, code, body)
		}
	}
}

var cellRE = regexp.MustCompile(`<td data-billing="(\w+)" data-field="(\w+)">([^<]*)`)

func TestCostPage(t *testing.T) {
	f := newCostFixture(t)
	f.publishFile("../testdata/accounting/mixed.jsonl")
	alice := f.adminToken("acme", "alice") // the org's whole page
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := noRedirect.Get(f.base + "/ui/cost?from=2026-11-01&to=2026-11-30&token=" + alice)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	loc, cookies := resp.Header.Get("Location"), resp.Cookies()
	if resp.StatusCode != 303 || strings.Contains(loc, "token") || len(cookies) != 1 || !cookies[0].HttpOnly {
		t.Fatalf("sign-in = %d, Location %q, cookies %v", resp.StatusCode, loc, cookies)
	}
	signedIn := func(path string) (int, string) { // a page, read with the sign-in's cookie
		req, _ := http.NewRequest("GET", f.base+path, nil)
		req.AddCookie(cookies[0])
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var page bytes.Buffer
		_, _ = page.ReadFrom(resp.Body)
		return resp.StatusCode, page.String()
	}
	code, html := signedIn(loc)
	if code != 200 || !strings.Contains(html, "<svg") || !strings.Contains(html, `class="metered"`) {
		t.Fatalf("page = %d %s", code, html)
	}
	// The total row (the table's footer) says what the summary API says.
	foot := html[strings.Index(html, "<tfoot>"):]
	got := map[string]string{}
	for _, m := range cellRE.FindAllStringSubmatch(foot, -1) {
		got[m[1]+"."+m[2]] = strings.TrimSpace(m[3])
	}
	want := map[string]string{"metered.calls": "3", "metered.tokens": "3,650", "metered.dollars": "$1.00",
		"subscription.calls": "2", "subscription.dollars": "$0.05", "unknown.calls": "3", "unknown.tokens": "150", "unknown.dollars": "$1.50"}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("total %s = %q, want %q", k, got[k], v)
		}
	}
	// A day whose metered cost nobody reported says so.
	if !regexp.MustCompile(`data-key="2026-11-03">[\s\S]*?data-field="dollars"><span class="silent">not reported`).MatchString(html) {
		t.Error("2026-11-03's metered dollars are not shown as not reported")
	}
	// Grouped by machine: the select offers it, and a row per machine.
	if code, html := signedIn("/ui/cost?from=2026-11-01&to=2026-11-30&groupBy=machine"); code != 200 ||
		!strings.Contains(html, "<option selected>machine</option>") || !strings.Contains(html, `data-key="w1"`) ||
		!strings.Contains(html, `data-key="w3"`) {
		t.Errorf("page by machine = %d %s", code, html)
	}
	code, body := f.do("GET", "/ui/cost", "", nil)
	if code != 401 || !strings.Contains(string(body), "token") {
		t.Fatalf("page without a token = %d %s", code, body)
	}
}
