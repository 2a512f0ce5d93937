package node_test

import (
	"bufio"
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/spinehq/spine/desktop"
)

// pageEvents opens a page's server-sent events as token and returns them
// line by line, once the stream answered 200.
func (f *fixture) pageEvents(path, token string) *bufio.Scanner {
	f.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	f.t.Cleanup(cancel)
	req, _ := http.NewRequestWithContext(ctx, "GET", f.base+path, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 200 {
		f.t.Fatalf("events %s: %v %v", path, resp, err)
	}
	f.t.Cleanup(func() { resp.Body.Close() })
	return bufio.NewScanner(resp.Body)
}

// page GETs a page as token and wants the status.
func (f *fixture) page(want int, path, token string) string {
	f.t.Helper()
	code, body := f.do("GET", path, token, nil)
	if code != want {
		f.t.Fatalf("GET %s = %d, want %d:\n%s", path, code, want, body)
	}
	return string(body)
}

// The remote sessions page lists the caller's remote sessions, most
// recently active first, each linking to its page, and the presence of the
// caller's runners; another member's are on neither their list nor a
// later page of it; ?after= pages on, and a fragment of a later page is
// its rows alone.
func TestRemoteListPage(t *testing.T) {
	f := newFixture(t)
	alice, bob := f.token("acme", "alice"), f.token("acme", "bob")
	f.desktopRunner(alice, "alice-laptop")
	create := func(tok, title string) desktop.Session {
		return decode[desktop.Session](t, f.mustDo(201, "POST", "/v1/remote-sessions", tok,
			map[string]any{"target": "desktop", "title": title, "instructions": "x", "deliverBy": time.Now().Add(time.Hour)}))
	}
	older, newer := create(alice, "<b>older</b>"), create(alice, "newer")
	theirs := create(bob, "bob's")

	body := f.page(200, "/ui/remote", alice)
	for _, want := range []string{`href="/ui/remote/` + older.ID + `"`, `href="/ui/remote/` + newer.ID + `"`,
		"&lt;b&gt;older&lt;/b&gt;", ">queued<", `data-runner="alice-laptop"`, "alice-laptop-host", ">present<",
		"claude-code", desktop.KindRemoteSession, `data-events="/ui/remote/events"`, `aria-current="page"`} {
		if !strings.Contains(body, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if strings.Index(body, newer.ID) > strings.Index(body, older.ID) {
		t.Errorf("the older session is listed first")
	}
	if strings.Contains(body, theirs.ID) {
		t.Errorf("alice's page lists bob's session")
	}
	if other := f.page(200, "/ui/remote", bob); strings.Contains(other, older.ID) || strings.Contains(other, "alice-laptop") ||
		!strings.Contains(other, theirs.ID) || !strings.Contains(other, "No desktop has signed in") {
		t.Errorf("bob's page:\n%s", other)
	}

	after := url.QueryEscape(desktop.NextSessions(newer).String())
	later := f.page(200, "/ui/remote?after="+after, alice)
	if !strings.Contains(later, older.ID) || strings.Contains(later, newer.ID) || strings.Contains(later, "data-events") {
		t.Errorf("the page after the newer session:\n%s", later)
	}
	rows := f.page(200, "/ui/remote?fragment=1&after="+after, alice)
	if !strings.HasPrefix(strings.TrimSpace(rows), "<tr") || !strings.Contains(rows, older.ID) || strings.Contains(rows, "<html") {
		t.Errorf("a later page's fragment:\n%s", rows)
	}
	if bobs := f.page(200, "/ui/remote?after="+after, bob); strings.Contains(bobs, older.ID) {
		t.Errorf("bob's later page lists alice's session")
	}
	if bad := f.page(400, "/ui/remote?after=nope", alice); !strings.Contains(bad, "after must be") {
		t.Errorf("a bad cursor:\n%s", bad)
	}
}

// The open list hears of a new remote session of the caller's and of a
// runner signing in; it does not hear of another member's session.
func TestRemoteListPageEvents(t *testing.T) {
	f := newFixture(t)
	alice, bob := f.token("acme", "alice"), f.token("acme", "bob")
	events := f.pageEvents("/ui/remote/events", alice)
	nextEvent(t, events, "ready")
	f.mustDo(201, "POST", "/v1/remote-sessions", bob,
		map[string]any{"target": "desktop", "instructions": "x", "deliverBy": time.Now().Add(time.Hour)})
	s := decode[desktop.Session](t, f.mustDo(201, "POST", "/v1/remote-sessions", alice,
		map[string]any{"target": "desktop", "instructions": "x", "deliverBy": time.Now().Add(time.Hour)}))
	nextEvent(t, events, "change")
	if data := nextLine(t, events); !strings.Contains(data, s.ID) {
		t.Fatalf("the first change is %s, want alice's %s", data, s.ID)
	}
	f.desktopRunner(alice, "alice-laptop")
	for {
		nextEvent(t, events, "change")
		if data := nextLine(t, events); strings.Contains(data, `"runners":1`) {
			break
		}
	}
}

func nextLine(t *testing.T, sc *bufio.Scanner) string {
	t.Helper()
	if !sc.Scan() {
		t.Fatalf("stream ended: %v", sc.Err())
	}
	return sc.Text()
}
