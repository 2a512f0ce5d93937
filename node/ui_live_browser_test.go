package node_test

import (
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/spinehq/spine/internal/chromium"
	"github.com/spinehq/spine/internal/spinetest"
)

// recordFetches makes the tab note every URL spine.js fetches, as it asks
// (window.fetched), so a test can tell what a change made it fetch.
const recordFetches = `(() => { window.fetched = []; const real = window.fetch;
	window.fetch = (u, o) => { window.fetched.push(String(u)); return real(u, o); }; return true; })()`

// On a chunk, an open session page fetches its transcript's tail alone:
// the change names the transcript, and the facts, steps and artifacts,
// which have data-part, are not fetched again.
func TestSessionPageFetchesWhatMovedInChromium(t *testing.T) {
	b := chromium.Start(t)
	f := newFixture(t)
	alice := f.token("acme", "alice")
	f.record(alice, spinetest.Start("s1"), spinetest.Text("s1", 1, "one\n"))
	tab := b.Open(t, f.base+"/ui/sessions/s1?token="+alice)
	// The look on ready: the facts, artifacts and both tails, each fetched once.
	tab.Await(t, `document.documentElement.dataset.live === 'on' && +document.documentElement.dataset.updates >= 4`)
	tab.Eval(t, recordFetches)
	f.record(alice, spinetest.Text("s1", 2, "two\n"))
	tab.Await(t, `document.querySelector('#transcript li[data-seq="2"]')`)
	if got := tab.Eval(t, `window.fetched.map(u => new URL(u).pathname).join(' ')`); got != "/ui/sessions/s1/transcript" {
		t.Fatalf("a chunk made the page fetch %q, want its transcript's tail alone", got)
	}
}

// gate is a way to the node that holds every page's event stream until
// release is closed: what moves between a page's render and its stream's
// start can be made to happen there.
type gate struct {
	URL     string
	asked   chan struct{} // a page asked for its stream
	release chan struct{}
}

func (f *fixture) gate() *gate {
	f.t.Helper()
	target, err := url.Parse(f.base)
	if err != nil {
		f.t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(target)
	proxy.FlushInterval = -1 // events as they come
	g := &gate{asked: make(chan struct{}, 1), release: make(chan struct{})}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/events") {
			select {
			case g.asked <- struct{}{}:
			default:
			}
			select {
			case <-g.release:
			case <-r.Context().Done():
				return
			}
		}
		proxy.ServeHTTP(w, r)
	}))
	f.t.Cleanup(func() { srv.CloseClientConnections(); srv.Close() }) // the tab's streams are open still
	f.t.Cleanup(g.open)
	g.URL = srv.URL
	return g
}

// wait waits until a page has asked for its stream (it has been rendered).
func (g *gate) wait(t *testing.T) {
	t.Helper()
	select {
	case <-g.asked:
	case <-time.After(spinetest.WaitTimeout):
		t.Fatal("the page never asked for its events")
	}
}

// open lets the held streams through, and every later one.
func (g *gate) open() {
	select {
	case <-g.release:
	default:
		close(g.release)
	}
}

// A chunk recorded after the page was rendered and before its stream
// opened shows up: the stream's baseline is when it opened, so no change
// would ever say so; the page looks once on every "ready".
func TestSessionPageCatchesUpOnReadyInChromium(t *testing.T) {
	b := chromium.Start(t)
	f := newFixture(t)
	alice := f.token("acme", "alice")
	f.record(alice, spinetest.Start("s1"), spinetest.Text("s1", 1, "one\n"))
	g := f.gate()
	tab := b.Open(t, g.URL+"/ui/sessions/s1?token="+alice)
	g.wait(t)
	f.record(alice, spinetest.Text("s1", 2, "two\n"))
	g.open()
	tab.Await(t, `document.documentElement.dataset.live === 'on' && document.querySelector('#transcript li[data-seq="2"]')`)
}

// The MCP node's record of a call the session reported first shows on the
// open page without a reload, in the step already shown (replaced by its
// id, not appended again).
func TestSessionPageShowsALateResultInChromium(t *testing.T) {
	b := chromium.Start(t)
	f := newFixture(t)
	alice := f.token("acme", "alice")
	f.record(alice, spinetest.Start("s1"), mcpEvent("s1", 1, "c1"))
	tab := b.Open(t, f.base+"/ui/sessions/s1?token="+alice)
	tab.Await(t, `document.documentElement.dataset.live === 'on' && document.querySelector('#step-1')`)
	tab.Eval(t, `window.notReloaded = true`)
	f.record(alice, spinetest.MCP("s1", "c1", "query"))
	tab.Await(t, `document.querySelector('#step-1').textContent.includes('as the MCP node saw it')`)
	if got := tab.Eval(t, `window.notReloaded === true && document.querySelectorAll('#steps li.step').length`); got != "1" {
		t.Fatalf("after the late result, without a reload: %s steps, want the one", got)
	}
}

// A refresh that reads the same replaces nothing (the facts after the
// look on ready: before, the first refresh replaced them whatever it
// said), and one that moves the status keeps the status's live region
// (its node, its content updated), so a screen reader reads out the new
// status alone.
func TestSessionPageReplacesOnlyWhatMovedInChromium(t *testing.T) {
	b := chromium.Start(t)
	f := newFixture(t)
	alice := f.token("acme", "alice")
	f.record(alice, spinetest.Start("s1"), spinetest.Text("s1", 1, "one\n"))
	g := f.gate()
	tab := b.Open(t, g.URL+"/ui/sessions/s1?token="+alice)
	g.wait(t)
	tab.Await(t, `document.querySelector('#session-facts h1')`)
	tab.Eval(t, `document.querySelector('#session-facts h1').kept = document.querySelector('#f-status').kept = true`)
	g.open()
	tab.Await(t, `document.documentElement.dataset.live === 'on' && +document.documentElement.dataset.updates >= 4`)
	if got := tab.Eval(t, `document.querySelector('#session-facts h1').kept === true`); got != "true" {
		t.Fatal("the facts were replaced by a refresh that read the same")
	}
	f.record(alice, spinetest.End("s1", "done", "", ""))
	tab.Await(t, `document.querySelector('#f-status').textContent === 'done'`)
	if got := tab.Eval(t, `document.querySelector('#f-status').kept === true`); got != "true" {
		t.Fatal("the status's live region was replaced, not updated")
	}
}
