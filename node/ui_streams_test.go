package node_test

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/spinehq/spine/desktop"
	"github.com/spinehq/spine/internal/spinetest"
	"github.com/spinehq/spine/server"
)

// openStream opens a page's event stream as token; closing it (the
// returned func, or the test's end) goes away as a browser tab does.
func (f *fixture) openStream(path, token string) (*http.Response, func()) {
	f.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), spinetest.WaitTimeout)
	req, _ := http.NewRequestWithContext(ctx, "GET", f.base+path, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		cancel()
		f.t.Fatalf("events %s: %v", path, err)
	}
	closed := func() { resp.Body.Close(); cancel() }
	f.t.Cleanup(closed)
	return resp, closed
}

// Stop ends every page's event stream: each ends cleanly (its handler
// returned, not a cut connection), and Stop returns after. Without the
// server's shutdown hook the sessions streams never end (http.Server's
// Shutdown waits its 10 s and leaves them open).
func TestStopEndsPageStreams(t *testing.T) {
	f := newFixture(t)
	alice := f.token("acme", "alice")
	f.record(alice, spinetest.Start("s1"), spinetest.Text("s1", 1, "one\n"))
	remote := decode[desktop.Session](t, f.mustDo(201, "POST", "/v1/remote-sessions", alice,
		map[string]any{"target": "desktop", "instructions": "x", "deliverBy": time.Now().Add(time.Hour)}))
	var open []*bufio.Scanner
	for _, path := range []string{"/ui/sessions/events", "/ui/sessions/s1/events", "/ui/remote/events", "/ui/remote/" + remote.ID + "/events"} {
		resp, _ := f.openStream(path, alice)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s = %d", path, resp.StatusCode)
		}
		sc := bufio.NewScanner(resp.Body)
		nextEvent(t, sc, "ready")
		open = append(open, sc)
	}

	stopped := make(chan struct{})
	go func() { f.n.Stop(); close(stopped) }()
	for i, sc := range open {
		for sc.Scan() {
		}
		if err := sc.Err(); err != nil {
			t.Fatalf("stream %d did not end on Stop: %v", i, err)
		}
	}
	select {
	case <-stopped:
	case <-time.After(spinetest.WaitTimeout):
		t.Fatal("Stop did not return once the streams ended")
	}
}

// A member may follow MaxPageStreamsPerMember pages at once, of any kind;
// the next is 429 too_many_streams with Retry-After, while another member
// still opens theirs; a page closed frees its slot.
func TestPageStreamsAreCapped(t *testing.T) {
	f := newFixture(t)
	alice, bob := f.token("acme", "alice"), f.token("acme", "bob")
	var closers []func()
	for range server.MaxPageStreamsPerMember {
		resp, closed := f.openStream("/ui/sessions/events", alice)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("a stream within the cap = %d", resp.StatusCode)
		}
		nextEvent(t, bufio.NewScanner(resp.Body), "ready")
		closers = append(closers, closed)
	}
	for _, path := range []string{"/ui/sessions/events", "/ui/remote/events"} {
		resp, _ := f.openStream(path, alice)
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") != "30" ||
			decode[server.ErrorBody](t, body).Error.Code != server.CodeTooManyStreams {
			t.Fatalf("%s past the cap = %d, Retry-After %q: %s", path, resp.StatusCode, resp.Header.Get("Retry-After"), body)
		}
	}
	if resp, _ := f.openStream("/ui/sessions/events", bob); resp.StatusCode != http.StatusOK {
		t.Fatalf("bob's stream = %d while alice is at her cap", resp.StatusCode)
	}

	closers[0]()
	deadline := time.Now().Add(spinetest.WaitTimeout)
	for {
		resp, closed := f.openStream("/ui/sessions/events", alice)
		if resp.StatusCode == http.StatusOK {
			break
		}
		closed()
		if time.Now().After(deadline) {
			t.Fatal("a closed stream's slot never came back")
		}
		time.Sleep(20 * time.Millisecond)
	}
}
