package node_test

import (
	"bytes"
	"fmt"
	"html"
	"regexp"
	"strings"
	"testing"

	"github.com/spinehq/spine/desktop"
	"github.com/spinehq/spine/internal/spinetest"
)

// An org admin reads any recorded session of the org through the API, as
// their pages show it: the session, its transcript and its recording
// run's steps. A member still gets the 404 of a missing session for
// another's, and another org's admin the same 404, byte for byte; cancel
// stays the owner's.
func TestAdminReadsTheOrgsSessions(t *testing.T) {
	f := newFixture(t)
	alice, bob := f.token("acme", "alice"), f.token("acme", "bob")
	carol, dan := f.adminToken("acme", "carol"), f.adminToken("globex", "dan")
	f.record(alice, finishedSession("s1", nil)...)
	f.record(alice, spinetest.Start("s2"))

	for _, path := range []string{"/v1/sessions/%s", "/v1/sessions/%s/transcript", "/v1/runs/run-%s/steps"} {
		code, body := f.do("GET", fmt.Sprintf(path, "s1"), carol, nil)
		_, own := f.do("GET", fmt.Sprintf(path, "s1"), alice, nil)
		if code != 200 || !bytes.Equal(body, own) {
			t.Errorf("%s: the admin's answer %d %s, alice's %s", path, code, body, own)
		}
		for who, tok := range map[string]string{"another member": bob, "another org's admin": dan} {
			c1, theirs := f.do("GET", fmt.Sprintf(path, "s1"), tok, nil)
			c2, missing := f.do("GET", fmt.Sprintf(path, "nope"), tok, nil)
			if c1 != 404 || c2 != 404 || !bytes.Equal(theirs, missing) {
				t.Errorf("%s, %s: %d %q, missing %d %q", path, who, c1, theirs, c2, missing)
			}
		}
	}
	c1, theirs := f.do("POST", "/v1/sessions/s2/cancel", carol, nil)
	c2, missing := f.do("POST", "/v1/sessions/nope/cancel", carol, nil)
	if c1 != 404 || c2 != 404 || !bytes.Equal(theirs, missing) {
		t.Errorf("the admin's cancel of alice's session = %d %s, of a missing one %d %s", c1, theirs, c2, missing)
	}
}

// GET /v1/sessions lists the caller's own; an org admin's ?member= lists
// that member's, and a member naming anyone but themself is a 400.
func TestListSessionsOfAMember(t *testing.T) {
	f := newFixture(t)
	alice, bob, carol := f.token("acme", "alice"), f.token("acme", "bob"), f.adminToken("acme", "carol")
	f.record(alice, spinetest.Start("a1"), spinetest.Start("a2"))
	ids := func(token, query string) string {
		t.Helper()
		code, body := f.do("GET", "/v1/sessions"+query, token, nil)
		if code != 200 {
			t.Fatalf("%s = %d %s", query, code, body)
		}
		var got []string
		for _, s := range decode[struct{ Sessions []struct{ ID string } }](t, body).Sessions {
			got = append(got, s.ID)
		}
		return strings.Join(got, " ")
	}
	for _, c := range []struct{ token, query, want string }{
		{carol, "", ""}, {carol, "?member=alice", "a1 a2"}, {carol, "?member=alice&after=a1&limit=1", "a2"},
		{alice, "?member=alice", "a1 a2"}, {bob, "?member=bob", ""}, {carol, "?member=dan", ""},
	} {
		if got := ids(c.token, c.query); got != c.want {
			t.Errorf("%s: %q, want %q", c.query, got, c.want)
		}
	}
	for _, q := range []string{"?member=alice", "?member=a%20b"} {
		if code, body := f.do("GET", "/v1/sessions"+q, bob, nil); code != 400 || !bytes.Contains(body, []byte("bad_request")) {
			t.Errorf("bob's %s = %d %s", q, code, body)
		}
	}
}

var hrefs = regexp.MustCompile(`href="(/[^"#]*)"`)

// deadLinks follows every link of a page with token and names those that
// do not answer 200.
func deadLinks(t *testing.T, f *fixture, page, token string) []string {
	t.Helper()
	var dead []string
	for _, m := range hrefs.FindAllStringSubmatch(page, -1) {
		link := html.UnescapeString(m[1])
		if code, _, _ := f.pageGet(link, token); code != 200 {
			dead = append(dead, fmt.Sprintf("%s (%d)", link, code))
		}
	}
	return dead
}

// An admin's view of another member's session links nothing the admin
// cannot open: its plan, its artifacts' traces, its task's remote session
// and its files are plain ids there, and links on its member's own view.
func TestAdminsSessionPagesHaveNoDeadLinks(t *testing.T) {
	f := newFixture(t)
	alice, carol := f.token("acme", "alice"), f.adminToken("acme", "carol")
	f.record(alice, finishedSession("s1", nil)...)
	r := f.desktopRunner(alice, "alice-laptop")
	sess := decode[desktop.Session](t, f.mustDo(201, "POST", "/v1/remote-sessions", alice,
		map[string]any{"target": "desktop", "instructions": "x"}))
	c := r.claim(sess.LatestTaskID)
	f.ingest(r.token, runnerStart("live-1", c.Task.ID), spinetest.Text("live-1", 1, "working\n"))
	f.waitCaughtUp()

	for _, path := range []string{"/ui/sessions/s1", "/ui/sessions/live-1", "/ui/sessions"} {
		_, _, own := f.pageGet(path, alice)
		code, _, admins := f.pageGet(path, carol)
		if code != 200 || !strings.Contains(admins, "plan-7") && path != "/ui/sessions/live-1" {
			t.Fatalf("the admin's %s = %d", path, code)
		}
		if dead := deadLinks(t, f, admins, carol); len(dead) > 0 {
			t.Errorf("the admin's %s links to %v", path, dead)
		}
		if dead := deadLinks(t, f, own, alice); len(dead) > 0 {
			t.Errorf("alice's %s links to %v", path, dead)
		}
	}
	_, _, own := f.pageGet("/ui/sessions/s1", alice)
	for _, link := range []string{`href="/ui/plans/plan-7"`, `href="/ui/provenance/art-run-s1.s2"`, `href="/ui/files/blake3:`} {
		if !strings.Contains(own, link) {
			t.Errorf("alice's own page lacks %s", link)
		}
	}
}
