package node_test

import (
	"cmp"
	"context"
	"fmt"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spinehq/spine/internal/spinetest"
	"github.com/spinehq/spine/streams"
)

// listed is one session for the sessions page's tests: started at T0 plus
// minutes, ended with status (running when ""), billing signal and model.
type listed struct {
	id, app, worker, plan  string
	minutes                int
	status, billing, model string
}

func (l listed) envelopes() []*streams.Envelope {
	start := spinetest.Start(l.id)
	start.At = spinetest.T0.Add(time.Duration(l.minutes) * time.Minute)
	start.App, start.WorkerID, start.PlanID = cmp.Or(l.app, "claude-code"), l.worker, l.plan
	if l.status == "" {
		return []*streams.Envelope{start}
	}
	end := spinetest.End(l.id, l.status, l.model, "")
	end.At = start.At.Add(90 * time.Second)
	end.Billing = l.billing
	end.Usage = &streams.Usage{InputTokens: 10, OutputTokens: 5}
	return []*streams.Envelope{start, end}
}

// recordListed records the sessions as tok's caller (record).
func (f *fixture) recordListed(tok string, sessions ...listed) {
	f.t.Helper()
	var envs []*streams.Envelope
	for _, s := range sessions {
		envs = append(envs, s.envelopes()...)
	}
	f.record(tok, envs...)
}

var listedRE = regexp.MustCompile(`<tr data-session="([^"]+)">`)

// listPage gets a sessions page as tok's caller: the status, the ids it
// lists in order, and the body.
func (f *fixture) listPage(tok, query string) (int, []string, string) {
	f.t.Helper()
	code, body := f.do("GET", "/ui/sessions?"+query, tok, nil)
	var ids []string
	for _, m := range listedRE.FindAllStringSubmatch(string(body), -1) {
		ids = append(ids, m[1])
	}
	return code, ids, string(body)
}

// Each caller's list is their own, newest first; an admin's is the org's,
// with a member filter that narrows it; a member's member filter cannot
// widen theirs, and another org is never in it.
func TestSessionsPageScope(t *testing.T) {
	f := newFixture(t)
	alice, bob, admin := f.token("acme", "alice"), f.token("acme", "bob"), f.adminToken("acme", "root")
	f.recordListed(alice, listed{id: "a-old", minutes: 1, status: "done"}, listed{id: "a-new", minutes: 3})
	f.recordListed(bob, listed{id: "b-mid", minutes: 2, status: "failed"})
	f.recordListed(f.token("other", "alice"), listed{id: "o-new", minutes: 4})

	for _, c := range []struct {
		name, tok, query string
		want             []string
	}{
		{"alice", alice, "", []string{"a-new", "a-old"}},
		{"bob", bob, "", []string{"b-mid"}},
		{"admin", admin, "", []string{"a-new", "b-mid", "a-old"}},
		{"admin, member bob", admin, "member=bob", []string{"b-mid"}},
		{"bob naming himself", bob, "member=bob", []string{"b-mid"}},
	} {
		code, ids, body := f.listPage(c.tok, c.query)
		if code != http.StatusOK || !slices.Equal(ids, c.want) {
			t.Errorf("%s: %d %v, want %v\n%s", c.name, code, ids, c.want, body)
		}
	}
	code, ids, body := f.listPage(bob, "member=alice")
	if code != http.StatusBadRequest || len(ids) != 0 || !strings.Contains(body, "only an org admin filters by member") {
		t.Errorf("bob filtering by alice = %d %v\n%s", code, ids, body)
	}
	// The admin's page has a member column and filter; a member's has neither.
	_, _, page := f.listPage(admin, "")
	if !strings.Contains(page, `<th scope="col">Member</th>`) || !strings.Contains(page, `name="member"`) {
		t.Error("the admin's page lacks the member column or filter")
	}
	if _, _, page := f.listPage(alice, ""); strings.Contains(page, `name="member"`) {
		t.Error("a member's page offers a member filter")
	}
}

// Every filter selects exactly its sessions; the row says what the
// session is in words.
func TestSessionsPageFilters(t *testing.T) {
	f := newFixture(t)
	alice := f.token("acme", "alice")
	f.recordListed(alice,
		listed{id: "s1", app: "codex", worker: "laptop", plan: "plan-1", minutes: 10, status: "done", billing: "metered", model: "gpt-5"},
		listed{id: "s2", worker: "desk", minutes: 20, status: "failed", billing: "subscription"},
		listed{id: "s3", worker: "laptop", plan: "plan-1", minutes: 24*60 + 5, status: "timeout"},
		listed{id: "s4", app: "codex", worker: "desk", minutes: 24*60 + 30},
	)
	for query, want := range map[string][]string{
		"":                                    {"s4", "s3", "s2", "s1"},
		"app=codex":                           {"s4", "s1"},
		"app=claude-code":                     {"s3", "s2"},
		"machine=laptop":                      {"s3", "s1"},
		"status=running":                      {"s4"},
		"status=done":                         {"s1"},
		"status=timeout":                      {"s3"},
		"billing=metered":                     {"s1"},
		"billing=subscription":                {"s2"},
		"billing=unknown":                     {"s3"}, // s4 runs: it has no router call yet
		"day=2026-11-01":                      {"s2", "s1"},
		"day=2026-11-02":                      {"s4", "s3"},
		"plan=plan-1":                         {"s3", "s1"},
		"app=codex&machine=desk":              {"s4"},
		"app=&machine=&status=&billing=&day=": {"s4", "s3", "s2", "s1"}, // the form's empty fields
	} {
		code, ids, body := f.listPage(alice, query)
		if code != http.StatusOK || !slices.Equal(ids, want) {
			t.Errorf("?%s = %d %v, want %v\n%s", query, code, ids, want, body)
		}
	}
	_, _, page := f.listPage(alice, "")
	for _, want := range []string{
		`<a href="/ui/sessions/s1">s1</a></td><td class="mono">2026-11-01 09:10:00 UTC</td><td>codex</td><td>run</td><td>laptop</td><td><span class="state done">done</span></td><td>gpt-5</td><td>metered</td><td class="num">1 min 30 s</td><td class="num">0</td><td><a href="/ui/plans/plan-1">plan-1</a></td>`,
		`<span class="state timeout">timed out</span></td><td><span class="silent">not reported</span></td><td>unknown</td>`,
		`<span class="state running">running</span></td><td><span class="silent">not reported</span></td><td><span class="silent">none yet</span></td><td class="num">running</td>`,
		`<p id="running" aria-live="polite" data-refresh="/ui/sessions?part=count">`, // spine.js adds fragment=1
		"1 session running now.",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %s", want)
		}
	}
	if _, _, page := f.listPage(alice, "app=codex"); !strings.Contains(page, "1 session these filters select running now.") {
		t.Error("the filtered page's count does not say it counts the filtered sessions")
	}
	if _, _, page := f.listPage(alice, "status=done"); !strings.Contains(page, "0 sessions these filters select running now.") {
		t.Error("a filter selecting no running session counts some")
	}
}

// Bad filter values are a 400 page in the frame saying what is wrong.
func TestSessionsPageBadFilters(t *testing.T) {
	f := newFixture(t)
	alice := f.token("acme", "alice")
	for query, want := range map[string]string{
		"app=cursor":                        `app &#34;cursor&#34; is not one of claude-code, codex`,
		"status=finished":                   `status &#34;finished&#34; is not one of running, done, failed`,
		"billing=free":                      `billing &#34;free&#34; is not one of metered, subscription, unknown`,
		"day=yesterday":                     `day &#34;yesterday&#34; is not a date: write it YYYY-MM-DD`,
		"machine=" + url.QueryEscape("a b"): `machine &#34;a b&#34; is not an id`,
		"plan=" + url.QueryEscape("p/1"):    `plan &#34;p/1&#34; is not an id`,
		"before=nope":                       `before is not a page cursor`,
		"member=bob":                        `only an org admin filters by member`,
	} {
		code, body := f.do("GET", "/ui/sessions?"+query, alice, nil)
		if code != http.StatusBadRequest || !strings.Contains(string(body), want) ||
			!strings.Contains(string(body), `<nav aria-label="Sections">`) {
			t.Errorf("?%s = %d, want 400 saying %s:\n%s", query, code, want, body)
		}
	}
}

// Pages follow the keyset newest first, the id breaking ties, each session
// once, the filters kept in the older link; only the newest page is live.
func TestSessionsPagePaging(t *testing.T) {
	f := newFixture(t)
	alice := f.token("acme", "alice")
	var all []listed
	var want, codex []string
	for i := 119; i >= 0; i-- { // newest first: minute i/2, so each minute has two sessions
		s := listed{id: fmt.Sprintf("p%03d", i), minutes: i / 2, status: "done"}
		if i%3 == 0 {
			s.app, codex = "codex", append(codex, s.id)
		}
		all, want = append(all, s), append(want, s.id)
	}
	f.recordListed(alice, all...)

	got, pages := f.walkPages(alice, "")
	if !slices.Equal(got, want) || pages != 3 {
		t.Fatalf("walked %d pages: %v\nwant %v", pages, got, want)
	}
	if got, _ := f.walkPages(alice, "app=codex"); !slices.Equal(got, codex) {
		t.Fatalf("codex pages: %v\nwant %v", got, codex)
	}
}

var olderRE = regexp.MustCompile(`<a href="([^"]+)" rel="next">Older sessions</a>`)

// walkPages follows the Older links from the first page of query, checking
// each older page keeps the filters and is not live.
func (f *fixture) walkPages(tok, query string) (ids []string, pages int) {
	f.t.Helper()
	path := "/ui/sessions?" + query
	for path != "" {
		code, body := f.do("GET", path, tok, nil)
		if code != http.StatusOK {
			f.t.Fatalf("%s = %d %s", path, code, body)
		}
		page := string(body)
		for _, m := range listedRE.FindAllStringSubmatch(page, -1) {
			ids = append(ids, m[1])
		}
		if live := strings.Contains(page, "data-refresh="); live != (pages == 0) {
			f.t.Errorf("page %d of %q: live = %v", pages, query, live)
		}
		pages++
		path = ""
		if m := olderRE.FindStringSubmatch(page); m != nil {
			path = strings.ReplaceAll(m[1], "&amp;", "&")
			if !strings.Contains(path, query) {
				f.t.Errorf("older link %s drops the filters %s", path, query)
			}
		}
	}
	return ids, pages
}

// The event stream says "change" when a session of the caller's starts,
// gets new content and ends; the fragments the script fetches then show it.
func TestSessionsEventsAnnounceChanges(t *testing.T) {
	f := newFixture(t)
	alice := f.token("acme", "alice")
	ctx, cancel := context.WithTimeout(context.Background(), spinetest.WaitTimeout)
	defer cancel()
	resp, events := f.openEvents(ctx, "/ui/sessions/events", alice)
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("events: Content-Type %q", ct)
	}
	nextEvent(t, events, "ready")

	f.ingest(alice, spinetest.Start("live-1"))
	nextEvent(t, events, "change")
	if code, body := f.do("GET", "/ui/sessions?fragment=1&part=count", alice, nil); code != 200 || string(body) != "1 session running now." {
		t.Errorf("count fragment = %d %q", code, body)
	}
	code, body := f.do("GET", "/ui/sessions?fragment=1", alice, nil)
	if code != 200 || !strings.HasPrefix(strings.TrimSpace(string(body)), `<tr data-session="live-1">`) || strings.Contains(string(body), "<html") {
		t.Errorf("rows fragment = %d %s", code, body)
	}
	f.ingest(alice, spinetest.Command("live-1", 1, "go test ./..."))
	nextEvent(t, events, "change")
	f.ingest(alice, spinetest.End("live-1", "done", "claude-opus-4", ""))
	nextEvent(t, events, "change")
	if _, body := f.do("GET", "/ui/sessions?fragment=1&part=count", alice, nil); string(body) != "0 sessions running now." {
		t.Errorf("count fragment after the end = %q", body)
	}
}

// /ui/?token= (the quickstart's link) signs in: it lands on the sessions
// list with the cookie set and the token gone from the URL.
func TestUIRootSignsIn(t *testing.T) {
	f := newCostFixture(t)
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	c := &http.Client{Jar: jar}
	resp, err := c.Get(f.base + "/ui/?token=" + url.QueryEscape(f.token("acme", "alice")))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Request.URL.Path != "/ui/sessions" || resp.Request.URL.RawQuery != "" {
		t.Fatalf("/ui/?token= ended at %d %s", resp.StatusCode, resp.Request.URL)
	}
	resp, err = c.Get(f.base + "/ui/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Request.URL.Path != "/ui/sessions" {
		t.Fatalf("/ui/ with the cookie ended at %d %s", resp.StatusCode, resp.Request.URL)
	}
}
