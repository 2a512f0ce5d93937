package node_test

import (
	"testing"

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
	tab.Await(t, `document.documentElement.dataset.live === 'on'`)
	tab.Eval(t, recordFetches)
	f.record(alice, spinetest.Text("s1", 2, "two\n"))
	tab.Await(t, `document.querySelector('#transcript li[data-seq="2"]')`)
	if got := tab.Eval(t, `window.fetched.map(u => new URL(u).pathname).join(' ')`); got != "/ui/sessions/s1/transcript" {
		t.Fatalf("a chunk made the page fetch %q, want its transcript's tail alone", got)
	}
}
