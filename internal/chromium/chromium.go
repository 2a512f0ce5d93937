package chromium

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// Environment variables the tests read.
const (
	EnvRequired    = "SPINE_BROWSER_TESTS"  // "1": a missing Chromium fails the test
	EnvScreenshots = "SPINE_SCREENSHOT_DIR" // where screenshots go
)

// replyTimeout bounds one DevTools command; Await has its own bound.
const replyTimeout = 60 * time.Second

// Binary is the Chromium on PATH, or "" when there is none.
func Binary() string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// Browser is one headless Chromium, stopped when the test ends.
type Browser struct {
	cmd     *exec.Cmd
	w       io.WriteCloser
	mu      sync.Mutex
	nextID  int
	pending map[int]chan reply
	done    chan struct{}
}

type reply struct {
	Result json.RawMessage
	Error  *struct{ Message string }
}

// Start starts Chromium, or skips the test (fails it under
// SPINE_BROWSER_TESTS=1) when it is not installed.
func Start(t testing.TB) *Browser {
	t.Helper()
	bin := Binary()
	if bin == "" {
		const why = "chromium is not installed: `make ui-check` installs it (apt-get install -y chromium) and runs the page tests"
		if os.Getenv(EnvRequired) == "1" {
			t.Fatal(why)
		}
		t.Skip(why)
	}
	toChrome, ourEnd, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	fromChrome, theirEnd, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	// The background-networking flags keep Chromium from dialling out of
	// a machine with a closed network at every start.
	cmd := exec.Command(bin, "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
		"--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--hide-scrollbars", "--remote-debugging-pipe", "--user-data-dir="+t.TempDir(), "--window-size=1200,900", "about:blank")
	cmd.ExtraFiles = []*os.File{toChrome, theirEnd}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	toChrome.Close()
	theirEnd.Close()
	b := &Browser{cmd: cmd, w: ourEnd, pending: map[int]chan reply{}, done: make(chan struct{})}
	go b.read(fromChrome)
	t.Cleanup(func() {
		b.w.Close()
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		<-b.done
		if t.Failed() {
			t.Logf("chromium stderr:\n%s", stderr.String())
		}
	})
	return b
}

func (b *Browser) read(r io.ReadCloser) {
	defer close(b.done)
	defer r.Close()
	br := bufio.NewReader(r)
	for {
		msg, err := br.ReadBytes(0)
		if err != nil {
			return
		}
		var m struct {
			ID int `json:"id"`
			reply
		}
		if json.Unmarshal(msg[:len(msg)-1], &m) != nil || m.ID == 0 {
			continue // an event
		}
		b.mu.Lock()
		ch := b.pending[m.ID]
		delete(b.pending, m.ID)
		b.mu.Unlock()
		if ch != nil {
			ch <- m.reply
		}
	}
}

// call sends one command (to a tab when session is set) and waits for its
// reply, decoding its result into out when out is not nil.
func (b *Browser) call(session, method string, params, out any) error {
	b.mu.Lock()
	b.nextID++
	id := b.nextID
	ch := make(chan reply, 1)
	b.pending[id] = ch
	b.mu.Unlock()
	msg := map[string]any{"id": id, "method": method, "params": params}
	if session != "" {
		msg["sessionId"] = session
	}
	data, _ := json.Marshal(msg)
	if _, err := b.w.Write(append(data, 0)); err != nil {
		return fmt.Errorf("cdp %s: %v", method, err)
	}
	select {
	case rep := <-ch:
		if rep.Error != nil {
			return fmt.Errorf("cdp %s: %s", method, rep.Error.Message)
		}
		if out != nil {
			if err := json.Unmarshal(rep.Result, out); err != nil {
				return fmt.Errorf("cdp %s reply: %v", method, err)
			}
		}
		return nil
	case <-b.done:
		return fmt.Errorf("cdp %s: chromium exited", method)
	case <-time.After(replyTimeout):
		return fmt.Errorf("cdp %s: no reply in %s", method, replyTimeout)
	}
}

// Tab is one page open in the browser.
type Tab struct {
	b       *Browser
	session string
}

// Open opens url in a new tab.
func (b *Browser) Open(t testing.TB, url string) *Tab {
	t.Helper()
	var target struct{ TargetID string }
	if err := b.call("", "Target.createTarget", map[string]any{"url": url}, &target); err != nil {
		t.Fatal(err)
	}
	var att struct{ SessionID string }
	if err := b.call("", "Target.attachToTarget", map[string]any{"targetId": target.TargetID, "flatten": true}, &att); err != nil {
		t.Fatal(err)
	}
	return &Tab{b: b, session: att.SessionID}
}

// Navigate loads url in the tab.
func (p *Tab) Navigate(t testing.TB, url string) {
	t.Helper()
	if err := p.b.call(p.session, "Page.navigate", map[string]any{"url": url}, nil); err != nil {
		t.Fatal(err)
	}
}

type evaluated struct {
	Result struct {
		Value any `json:"value"`
	} `json:"result"`
	ExceptionDetails *struct {
		Text      string `json:"text"`
		Exception *struct {
			Description string `json:"description"`
		} `json:"exception"`
	} `json:"exceptionDetails"`
}

func (e *evaluated) err(expr string) error {
	d := e.ExceptionDetails
	if d == nil {
		return nil
	}
	msg := d.Text
	if d.Exception != nil && d.Exception.Description != "" {
		msg = d.Exception.Description
	}
	return fmt.Errorf("evaluate %s: %s", expr, msg)
}

// Eval evaluates a JavaScript expression in the page (awaiting a promise)
// and returns its value as text.
func (p *Tab) Eval(t testing.TB, expr string) string {
	t.Helper()
	var res evaluated
	err := p.b.call(p.session, "Runtime.evaluate", map[string]any{"expression": expr, "awaitPromise": true, "returnByValue": true}, &res)
	if err == nil {
		err = res.err(expr)
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(fmt.Sprint(res.Result.Value))
}

// AwaitTimeout bounds one Await: a condition not met by then fails the test.
const AwaitTimeout = 30 * time.Second

// Await waits until the page has loaded (past about:blank and the sign-in
// redirect) and then until cond, a JavaScript expression, is true: it is
// checked on load and on every DOM change.
func (p *Tab) Await(t testing.TB, cond string) {
	t.Helper()
	p.loaded()
	js := `new Promise((resolve, reject) => {
	  const ok = () => { try { return !!(` + cond + `); } catch (e) { return false; } };
	  const check = () => { if (ok()) { resolve(true); return true; } return false; };
	  const watch = () => { if (check()) return;
	    new MutationObserver(check).observe(document, {subtree: true, childList: true, characterData: true, attributes: true}); };
	  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', watch); else watch();
	  setTimeout(() => reject(new Error('timed out waiting for: ' + ` + jsString(cond) + `)), ` +
		fmt.Sprint(AwaitTimeout.Milliseconds()) + `);
	})`
	if got := p.Eval(t, js); got != "true" {
		t.Fatalf("await %s = %s", cond, got)
	}
}

// loaded waits for a document that is not about:blank and not loading.
// The first evaluations may race the navigation (about:blank, then the
// redirect that sets the sign-in cookie), which destroys the context they
// run in: they are retried until the page is the one asked for.
func (p *Tab) loaded() {
	deadline := time.Now().Add(AwaitTimeout)
	for time.Now().Before(deadline) {
		var res evaluated
		err := p.b.call(p.session, "Runtime.evaluate", map[string]any{"returnByValue": true,
			"expression": `location.href !== 'about:blank' && !location.search.includes('token=') && document.readyState !== 'loading'`}, &res)
		if err == nil && res.Result.Value == true {
			return
		}
		// A pause inside the page; a navigation may end it early.
		_ = p.b.call(p.session, "Runtime.evaluate", map[string]any{"expression": `new Promise(r => setTimeout(r, 50))`, "awaitPromise": true}, nil)
	}
}

func jsString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// maxShotHeight bounds a screenshot of a long page, in CSS pixels.
const maxShotHeight = 4000

// Screenshot captures the whole page (at most maxShotHeight tall) as name.png in SPINE_SCREENSHOT_DIR
// (else the test's temp directory) and returns the file's path.
func (p *Tab) Screenshot(t testing.TB, name string) string {
	t.Helper()
	var metrics struct {
		CSSContentSize struct{ Width, Height float64 } `json:"cssContentSize"`
	}
	if err := p.b.call(p.session, "Page.getLayoutMetrics", nil, &metrics); err != nil {
		t.Fatal(err)
	}
	size := metrics.CSSContentSize
	clip := map[string]any{"x": 0, "y": 0, "scale": 1,
		"width": max(size.Width, 320), "height": min(max(size.Height, 200), maxShotHeight)}
	var shot struct{ Data string }
	err := p.b.call(p.session, "Page.captureScreenshot", map[string]any{"format": "png", "captureBeyondViewport": true, "clip": clip}, &shot)
	if err != nil {
		t.Fatal(err)
	}
	png, err := base64.StdEncoding.DecodeString(shot.Data)
	if err != nil || len(png) < 1000 {
		t.Fatalf("screenshot %s: %d bytes, %v", name, len(png), err)
	}
	dir := os.Getenv(EnvScreenshots)
	if dir == "" {
		dir = t.TempDir()
	}
	path := filepath.Join(dir, name+".png")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s (%d bytes)", path, len(png))
	return path
}
