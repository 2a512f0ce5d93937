package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spinehq/spine/auth"
	"github.com/spinehq/spine/internal/chromium"
	"github.com/spinehq/spine/internal/spinetest"
	"github.com/spinehq/spine/streams"
)

// publishFile writes envs as a JSON-lines file and sends it with spine
// publish, as the caller SPINE_TOKEN names (each start's owner is the token's).
func publishFile(t *testing.T, envs ...*streams.Envelope) {
	t.Helper()
	var b strings.Builder
	for _, e := range envs {
		if e.Type == streams.TypeSessionStart {
			e.Owner = nil
		}
		line, err := e.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		b.Write(line)
		b.WriteByte('\n')
	}
	path := filepath.Join(t.TempDir(), "envelopes.jsonl")
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := capture(t, "publish", path); err != nil {
		t.Fatalf("publish: %v\n%s", err, out)
	}
}

// A session streamed through spine publish, on its page in Chromium: the
// transcript grows and the status changes without a reload; a session with
// a hole shows the gap; another member gets the page of a missing session.
// The page passes every check of internal/chromium (keyboard, screen
// reader, phone) and a command's folded output opens with Enter.
func TestSessionPageInChromium(t *testing.T) {
	b := chromium.Start(t)
	n, caughtUp := testNode(t)
	dev, _ := n.DevToken()
	base := "http://" + n.HTTPAddr()

	publishFile(t, spinetest.Start("live-1"), spinetest.Text("live-1", 1, "$ go test ./...\n"),
		spinetest.Command("live-1", 2, "go test ./..."), spinetest.Stderr("live-1", 3, "--- FAIL: TestParse\n"))
	caughtUp()
	tab := b.Open(t, base+"/ui/sessions/live-1?token="+dev)
	tab.Await(t, `document.documentElement.dataset.live === 'on'`)
	if got := tab.Eval(t, `document.querySelector('#f-status').textContent`); got != "running" {
		t.Fatalf("status reads %q", got)
	}
	tab.Eval(t, `window.notReloaded = true`) // a reload would lose it
	chromium.Report(t, "screen reader, running", tab.AXCheck(t, "#f-status", "#transcript ol", "#steps ol"))

	publishFile(t, spinetest.Text("live-1", 4, "fixing the parser\n"), spinetest.Write("live-1", 5, "parse.go", "package parse\n"),
		spinetest.Text("live-1", 6, "ok  \tparse\t0.01s\n"))
	tab.Await(t, `document.querySelector('#transcript li[data-seq="6"]') && document.querySelector('#steps li[data-idx="2"]')`)
	publishFile(t, spinetest.End("live-1", "done", "claude-sonnet-4-5", "high"))
	tab.Await(t, `document.querySelector('#f-status').textContent === 'done' && document.documentElement.dataset.live === 'ended'`)
	if got := tab.Eval(t, `window.notReloaded === true && document.querySelectorAll('#transcript li[data-seq]').length`); got != "4" {
		t.Fatalf("after the end, without a reload: %s transcript lines, want 4", got)
	}
	if got := tab.Eval(t, `document.querySelector('#transcript li.stderr .stream').textContent`); got != "stderr" {
		t.Fatalf("the stderr line is labelled %q", got)
	}
	tab.Screenshot(t, "ui-session")
	tab.Audit(t, "#f-status")
	tab.TabTo(t, "#steps details summary")
	tab.Press(t, "Enter")
	tab.Await(t, `document.querySelector('#steps details').open`)
	output := `document.querySelector('#steps details pre')`
	if got := tab.Eval(t, output+`.checkVisibility() && `+output+`.textContent`); got != "ok\n" && got != "ok" {
		t.Fatalf("the command's output, opened with Enter, reads %q", got)
	}
	tab.Screenshot(t, "ui-session-phone")
	tab.Press(t, "Space")
	tab.Await(t, `!document.querySelector('#steps details').open`)

	publishFile(t, spinetest.Start("gap-1"), spinetest.Text("gap-1", 1, "started\n"), spinetest.Text("gap-1", 2, "reading\n"),
		spinetest.Text("gap-1", 10, "resumed\n"), spinetest.End("gap-1", "done", "", ""))
	caughtUp()
	hole := b.Open(t, base+"/ui/sessions/gap-1")
	hole.Await(t, `document.querySelector('#transcript li.hole')`)
	if got := hole.Eval(t, `document.querySelector('#transcript li.hole strong').textContent`); got != "seq 3–9 missing" {
		t.Fatalf("the hole reads %q", got)
	}
	if got := hole.Eval(t, `document.querySelector('#incomplete strong').textContent`); got != "Incomplete: 7 actions dropped." {
		t.Fatalf("the warning reads %q", got)
	}
	hole.Screenshot(t, "ui-session-hole")

	bob, err := n.Signer.Mint(auth.Claims{Org: "dev", Member: "bob"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	theirs := b.Open(t, base+"/ui/sessions/live-1?token="+bob)
	theirs.Await(t, `document.querySelector('h1')`)
	missing := b.Open(t, base+"/ui/sessions/no-such-session")
	missing.Await(t, `document.querySelector('h1')`)
	page := `document.documentElement.outerHTML`
	if got, want := theirs.Eval(t, page), missing.Eval(t, page); got != want || !strings.Contains(got, "session not found") {
		t.Fatalf("bob's view of dev's session:\n%s\nnot the missing session's:\n%s", got, want)
	}
}
