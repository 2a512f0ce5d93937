package node_test

import (
	"testing"

	"github.com/spinehq/spine/desktop"
	"github.com/spinehq/spine/internal/chromium"
)

// The remote sessions page in Chromium shows the caller's runner present
// and, without a reload, a remote session created while it is open.
func TestRemoteListPageInChromium(t *testing.T) {
	b := chromium.Start(t)
	f := newFixture(t)
	alice := f.token("acme", "alice")
	f.desktopRunner(alice, "alice-laptop")
	create := func(title string) desktop.Session {
		return decode[desktop.Session](t, f.mustDo(201, "POST", "/v1/remote-sessions", alice,
			map[string]any{"target": "desktop", "title": title, "instructions": "x"}))
	}
	create("tidy the imports")
	tab := b.Open(t, f.base+"/ui/remote?token="+alice)
	tab.Await(t, `document.documentElement.dataset.live === 'on'`)
	if got := tab.Eval(t, `document.querySelector('#runners tr[data-runner="alice-laptop"] td .state').textContent`); got != "present" {
		t.Fatalf("the runner's presence reads %q", got)
	}
	later := create("run the tests")
	tab.Await(t, `document.querySelector('#remote-rows tr[data-session="`+later.ID+`"]')`)
	tab.Screenshot(t, "ui-remote")
}
