// Package chromium drives Debian's headless Chromium for spine's page
// tests over the DevTools protocol on a pipe (--remote-debugging-pipe:
// JSON messages separated by NUL bytes on fds 3 and 4), so the tests need
// no driver binary and no npm package.
//
// A test starts one browser, opens a tab on a page of a real spine, waits
// on conditions inside the page (checked on every DOM change, never on a
// timer of ours) and keeps a screenshot:
//
//	b := chromium.Start(t)
//	tab := b.Open(t, base+"/ui/sessions?token="+tok)
//	tab.Await(t, `document.querySelector('#sessions tbody tr')`)
//	tab.Screenshot(t, "ui-sessions")
//
// Each page's test then runs the checks that prove the page readable on a
// laptop and a phone, keyboard-navigable and followed by a screen reader;
// each returns the problems it found (Report fails the test with them):
//
//	chromium.Report(t, "keyboard", tab.KeyboardCheck(t)) // real Tab and Enter key events
//	chromium.Report(t, "screen reader", tab.AXCheck(t, "#running")) // the accessibility tree; #running is live
//	tab.Phone(t) // 390×844, laid out as a phone does
//	chromium.Report(t, "phone", tab.Overflow(t))
//	tab.Screenshot(t, "ui-sessions-phone")
//
// or, the same in one call, tab.Audit(t, "#running"). TestChecksInChromium
// shows each check finding the problem it looks for on a page that has it.
//
// Without Chromium the tests skip naming `make ui-check`, which installs it;
// with SPINE_BROWSER_TESTS=1 (what make ui-check sets) a missing Chromium
// fails them instead. Screenshots go to SPINE_SCREENSHOT_DIR (the make
// target's bin/screenshots), else the test's temp directory.
package chromium
