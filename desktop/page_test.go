package desktop_test

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"net/http/cookiejar"
	"strings"
	"testing"
	"time"

	"github.com/spinehq/spine/desktop"
)

// pageClient is a browser-like client: it keeps the cookie ?token= sets.
func pageClient(t *testing.T) *http.Client {
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	return &http.Client{Jar: jar}
}

func get(t *testing.T, c *http.Client, url string) (int, string) {
	t.Helper()
	resp, err := c.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// The session page is server-rendered for its member (signed in once with
// ?token=, kept in an HttpOnly cookie), readable without script, and tells
// an open page when the session changes.
func TestSessionPage(t *testing.T) {
	e := newEnv(t)
	alice := e.member("acme", "alice")
	r := e.runner(alice, "laptop", "alice-laptop")
	sess := e.create(alice, map[string]any{"target": "desktop", "title": "<b>tidy</b>", "instructions": "tidy the imports"})
	page := e.base + "/ui/remote/" + sess.ID

	if code, body := get(t, http.DefaultClient, page); code != 401 || !strings.Contains(body, "?token=") {
		t.Fatalf("page without a token = %d %s", code, body)
	}
	c := pageClient(t)
	code, body := get(t, c, page+"?token="+alice)
	if code != 200 || !strings.Contains(body, "&lt;b&gt;tidy&lt;/b&gt;") || !strings.Contains(body, ">queued<") ||
		!strings.Contains(body, "alice-laptop") || !strings.Contains(body, "tidy the imports") ||
		!strings.Contains(body, `http-equiv="refresh"`) {
		t.Fatalf("page = %d %s", code, body)
	}
	bob := pageClient(t)
	_, theirs := get(t, bob, page+"?token="+e.member("acme", "bob"))
	_, missing := get(t, bob, e.base+"/ui/remote/rs-nope")
	if theirs != missing || !strings.Contains(theirs, "not found") {
		t.Fatalf("bob's view of alice's page %q vs missing %q", theirs, missing)
	}

	// An open page hears of the runner's event and re-reads its live part.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", page+"/events", nil)
	resp, err := c.Do(req)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("page events: %v %v", resp, err)
	}
	defer resp.Body.Close()
	lines := bufio.NewScanner(resp.Body)
	waitLine := func(prefix string) {
		t.Helper()
		for lines.Scan() {
			if strings.HasPrefix(lines.Text(), prefix) {
				return
			}
		}
		t.Fatalf("stream ended before %q", prefix)
	}
	waitLine("event: ready")
	claim := r.claim(sess.LatestTaskID)
	waitLine("event: change")
	r.post(sess.LatestTaskID, "events", map[string]any{"fence": claim.Fence,
		"events": []desktop.RunnerEvent{{Seq: 1, Type: desktop.EventAssistantText, Text: "imports tidied at " + time.Now().Format(time.Kitchen)}}})
	waitLine("event: change")
	_, frag := get(t, c, page+"?fragment=1")
	if !strings.Contains(frag, "imports tidied") || !strings.Contains(frag, ">running<") || strings.Contains(frag, "<html") {
		t.Fatalf("fragment = %s", frag)
	}
}
