package desktop_test

import (
	"testing"

	"github.com/spinehq/spine/desktop"
	"github.com/spinehq/spine/internal/chromium"
)

// The remote session's page in headless Chromium: an event the fake runner
// posts appears on the open page without a reload, the page passes every
// check of internal/chromium (keyboard, screen reader, phone), and it is
// captured (make ui-check; the PNG goes to $SPINE_SCREENSHOT_DIR or the
// test's temp dir).
func TestRemoteSessionPageInChromium(t *testing.T) {
	b := chromium.Start(t)
	e := newEnv(t)
	alice := e.member("acme", "alice")
	r := e.runner(alice, "laptop", "alice-laptop")
	sess := e.create(alice, map[string]any{"target": "desktop", "title": "watch me", "instructions": "say hello"})
	claim := r.claim(sess.LatestTaskID)

	page := b.Open(t, e.base+"/ui/remote/"+sess.ID+"?token="+alice)
	// The page is live once its event stream said ready.
	page.Await(t, `document.documentElement.dataset.live === 'on'`)
	if got := page.Eval(t, `document.getElementById('state').textContent`); got != "claimed" {
		t.Fatalf("state on the page = %q", got)
	}
	r.post(sess.LatestTaskID, "events", map[string]any{"fence": claim.Fence,
		"events": []desktop.RunnerEvent{{Seq: 1, Type: desktop.EventAssistantText, Text: "hello from the fake runner"}}})
	page.Await(t, `document.getElementById('transcript').innerText.includes('hello from the fake runner')`)
	if got := page.Eval(t, `document.getElementById('state').textContent`); got != "running" {
		t.Fatalf("state after the event = %q", got)
	}
	page.Screenshot(t, "ui-remote-session")
	page.Audit(t, "#state")
}
