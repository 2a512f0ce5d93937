package chromium

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// badPage has one of each problem the checks look for; a page's test
// finds none of them on spine's pages.
const badPage = `<!doctype html><html lang="en"><head><meta name="viewport" content="width=device-width, initial-scale=1">
<title>bad</title><style>.ringless:focus { outline: none } .ghost { opacity: 0 }</style></head><body>
<a href="#top" id="top">Top</a>
<nav><a href="#a">A section</a></nav>
<main id="main" tabindex="-1">
<p>No heading. <button tabindex="-1">Out of reach</button> <a class="ringless" href="#r">No ring</a> <a class="ghost" href="#g">Ghost</a></p>
<input name="q"><svg width="10" height="10"><rect width="5" height="5"/></svg>
<span class="state done"></span><p id="count">3 running</p>
<div style="width: 600px">wide</div>
<div style="overflow-x: auto"><table style="width: 900px"><tr><th>scrolls on purpose</th></tr></table></div>
</main><div role="main">a second main</div></body></html>`

// noViewportPage lays out as a desktop page on a phone.
const noViewportPage = `<!doctype html><html lang="en"><head><title>no viewport</title></head><body><main><h1>x</h1></main></body></html>`

// Each check finds the problems a bad page has, so a page's test that
// reports none has proved something.
func TestChecksInChromium(t *testing.T) {
	b := Start(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		page := badPage
		if r.URL.Path == "/no-viewport" {
			page = noViewportPage
		}
		_, _ = io.WriteString(w, page)
	}))
	t.Cleanup(srv.Close)

	tab := b.Open(t, srv.URL+"/bad")
	tab.Await(t, `document.querySelector('main')`)
	expect(t, "keyboard", tab.KeyboardCheck(t),
		`the first Tab reaches a#top "Top", not the skip link`,
		`Enter on the skip link leaves the focus on a#top "Top"`,
		`button "Out of reach" is never reached with Tab`,
		`a.ringless "No ring" has the focus and no focus ring`,
		`a.ghost "Ghost" has the focus but is not to be seen`)
	expect(t, "screen reader", tab.AXCheck(t, "#count", "#missing"),
		"2 main landmarks, not one",
		"a navigation landmark has no name",
		"0 h1 headings, not one",
		`a textbox (input[name="q"]) has no accessible name`,
		"an image (svg) has no accessible name",
		`a state (span[class="state done"]) is colour alone`,
		"#count is not a live region",
		"#missing is not on the page")
	tab.Phone(t)
	phone := tab.Overflow(t)
	expect(t, "phone", phone,
		"the page scrolls sideways: ",
		"main is ",
		`div "wide" reaches `)
	for _, p := range phone {
		if strings.Contains(p, "scrolls on purpose") {
			t.Errorf("phone: reported what scrolls on purpose: %s", p)
		}
	}

	desktop := b.Open(t, srv.URL+"/no-viewport")
	desktop.Await(t, `document.querySelector('main')`)
	desktop.Phone(t)
	expect(t, "phone, no viewport meta", desktop.Overflow(t), "the page is laid out 980px wide on a 390px screen")
}

// expect fails the test unless each of want starts one of problems.
func expect(t *testing.T, check string, problems []string, want ...string) {
	t.Helper()
	for _, w := range want {
		found := false
		for _, p := range problems {
			found = found || strings.HasPrefix(p, w)
		}
		if !found {
			t.Errorf("%s: no problem %q among %q", check, w, problems)
		}
	}
}
