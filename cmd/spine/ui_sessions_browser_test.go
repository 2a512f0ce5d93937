package main

import (
	"testing"
	"time"

	"github.com/spinehq/spine/internal/chromium"
	"github.com/spinehq/spine/internal/spinetest"
	"github.com/spinehq/spine/streams"
)

// ended is a session that started minutes after spinetest.T0 and ended a
// while later as status, with usage and the billing signal given.
func ended(id, app, billing, status string, minutes int) []*streams.Envelope {
	start := spinetest.Start(id)
	start.App, start.At = app, spinetest.T0.Add(time.Duration(minutes)*time.Minute)
	end := spinetest.End(id, status, "claude-sonnet-4-5", "")
	end.At, end.Billing = start.At.Add(3*time.Minute+20*time.Second), billing
	end.Usage = &streams.Usage{InputTokens: 1200, OutputTokens: 300}
	return []*streams.Envelope{start, end}
}

// A session streamed through spine publish appears in the open sessions
// list without a reload, and the running count follows its start and end;
// the list passes every check of internal/chromium (keyboard, screen
// reader, phone).
func TestSessionsPageInChromium(t *testing.T) {
	b := chromium.Start(t)
	n, caughtUp := testNode(t)
	dev, _ := n.DevToken()
	var earlier []*streams.Envelope
	for _, s := range [][]*streams.Envelope{ended("fix-parser", "claude-code", "subscription", "done", 1),
		ended("bump-deps", "codex", "metered", "done", 2), ended("flaky-test", "claude-code", "", "failed", 3)} {
		earlier = append(earlier, s...)
	}
	publishFile(t, earlier...)
	caughtUp()

	tab := b.Open(t, "http://"+n.HTTPAddr()+"/ui/sessions?token="+dev)
	tab.Await(t, `document.documentElement.dataset.live === 'on'`)
	running := `document.querySelector('#running').textContent`
	if got := tab.Eval(t, running); got != "0 sessions running now." {
		t.Fatalf("before: %q", got)
	}
	tab.Eval(t, `window.notReloaded = true`) // a reload would lose it

	live := spinetest.Start("live-1")
	live.At = spinetest.T0.Add(10 * time.Minute)
	publishFile(t, live, spinetest.Text("live-1", 1, "$ go test ./...\n"), spinetest.Command("live-1", 2, "go test ./..."))
	row := `document.querySelector('#rows tr[data-session="live-1"]')`
	tab.Await(t, row+` && `+running+` === '1 session running now.'`)
	if got := tab.Eval(t, `window.notReloaded === true && [...document.querySelectorAll('#rows tr')].map(r => r.dataset.session).join(' ')`); got != "live-1 flaky-test bump-deps fix-parser" {
		t.Fatalf("the list, without a reload: %s", got)
	}
	if got := tab.Eval(t, row+`.querySelector('.state').textContent`); got != "running" {
		t.Fatalf("the new session's status reads %q", got)
	}
	tab.Screenshot(t, "ui-sessions")

	publishFile(t, spinetest.End("live-1", "done", "claude-opus-4", ""))
	tab.Await(t, running+` === '0 sessions running now.' && `+row+`.querySelector('.state').textContent === 'done'`)
	if got := tab.Eval(t, `window.notReloaded === true`); got != "true" {
		t.Fatal("the page reloaded")
	}
	tab.Audit(t, "#running")
	tab.Screenshot(t, "ui-sessions-phone")
}
