package node_test

import (
	"strings"
	"testing"

	"github.com/spinehq/spine/desktop"
	"github.com/spinehq/spine/internal/chromium"
	"github.com/spinehq/spine/internal/spinetest"
	"github.com/spinehq/spine/streams"
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
	if got := tab.Eval(t, `[...document.querySelectorAll('table')].filter(t => t.closest('[aria-live]')).length`); got != "0" {
		t.Fatalf("%s tables are in a live region: each move of a runner's last seen reads them out again", got)
	}
	tab.Screenshot(t, "ui-remote")
	tab.Audit(t, "#state-"+later.ID, "#presence-alice-laptop")
}

// The dead letters page in Chromium lists the caller's letter with its
// reason, and its link opens the message as stored.
func TestDeadLettersPageInChromium(t *testing.T) {
	b := chromium.Start(t)
	f := newFixture(t)
	alice := f.token("acme", "alice")
	f.ingest(alice, spinetest.Start("s1"), spinetest.End("s1", "done", "", ""), spinetest.Text("s1", 1, "too late"))
	f.waitCaughtUp()
	tab := b.Open(t, f.base+"/ui/deadletters?token="+alice)
	tab.Await(t, `document.querySelector('#deadletter-rows tr[data-letter] .state')`)
	if got := tab.Eval(t, `document.querySelector('#deadletter-rows tr[data-letter] .state').textContent`); got != streams.ReasonSessionEnded {
		t.Fatalf("the letter's reason reads %q", got)
	}
	tab.Screenshot(t, "ui-deadletters")
	tab.Audit(t)
	tab.Eval(t, `document.querySelector('#deadletter-rows tr[data-letter] a').click()`)
	tab.Await(t, `document.querySelector('#message')`)
	if got := tab.Eval(t, `document.querySelector('#message').textContent`); !strings.Contains(got, `"text":"too late"`) {
		t.Fatalf("the message reads %q", got)
	}
}

// The provenance page in Chromium, reached through its search form, names
// the producer of a session's file and "a person uploaded it" for the
// upload of the same bytes.
func TestProvenancePageInChromium(t *testing.T) {
	b := chromium.Start(t)
	f, notes, _ := provenanceFixture(t)
	tab := b.Open(t, f.base+"/ui/provenance?token="+f.token("acme", "alice"))
	tab.Await(t, `document.querySelector('#trace-id')`)
	tab.Eval(t, `document.querySelector('#trace-id').value = `+jsQuote(notes)+`; document.querySelector('form[role=search]').submit()`)
	tab.Await(t, `document.querySelectorAll('#artifacts .producer').length === 2`)
	producers := tab.Eval(t, `[...document.querySelectorAll('#artifacts .producer')].map(e => e.textContent).join(' | ')`)
	if !strings.Contains(producers, "claude-code, model claude-opus-4-5, effort high, session s1") ||
		!strings.Contains(producers, "a person uploaded it: alice") {
		t.Fatalf("the producers read %q", producers)
	}
	tab.Screenshot(t, "ui-provenance")
	tab.Audit(t)
}

// The plan page in Chromium lists each step's sessions.
func TestPlanPageInChromium(t *testing.T) {
	b := chromium.Start(t)
	f := planFixture(t)
	tab := b.Open(t, f.base+"/ui/plans/plan-7?token="+f.adminToken("acme", "alice"))
	tab.Await(t, `document.querySelector('li[data-step="step-2"] tr[data-session="p1b"] a')`)
	if got := tab.Eval(t, `document.querySelector('li[data-step="step-2"] tr[data-session="p1b"] a').getAttribute('href')`); got != "/ui/sessions/p1b" {
		t.Fatalf("step-2's session links %q", got)
	}
	tab.Screenshot(t, "ui-plan")
	tab.Audit(t)
}

func jsQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `\'`) + "'" }
