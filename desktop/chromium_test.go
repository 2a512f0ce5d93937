package desktop_test

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

	"github.com/spinehq/spine/desktop"
)

// The session page in headless Chromium: an event the fake runner posts
// appears on the open page without a reload, and the page is captured.
// It needs Debian's chromium (make session-page-check installs it); the PNG goes
// to $SPINE_SCREENSHOT_DIR (or the test's temp dir).
func TestSessionPageInChromium(t *testing.T) {
	bin := chromiumBinary()
	if bin == "" {
		t.Skip("chromium not found: `make session-page-check` installs it (apt-get install -y chromium) and runs this test")
	}
	e := newEnv(t)
	alice := e.member("acme", "alice")
	r := e.runner(alice, "laptop", "alice-laptop")
	sess := e.create(alice, map[string]any{"target": "desktop", "title": "watch me", "instructions": "say hello"})
	claim := r.claim(sess.LatestTaskID)

	b := startChromium(t, bin)
	page := b.open(t, e.base+"/ui/remote/"+sess.ID+"?token="+alice)
	// The page is live once its event stream said ready.
	page.await(t, `document.documentElement.dataset.live === 'on'`)
	if got := page.eval(t, `document.getElementById('state').textContent`); got != "claimed" {
		t.Fatalf("state on the page = %q", got)
	}
	r.post(sess.LatestTaskID, "events", map[string]any{"fence": claim.Fence,
		"events": []desktop.RunnerEvent{{Seq: 1, Type: desktop.EventAssistantText, Text: "hello from the fake runner"}}})
	page.await(t, `document.getElementById('transcript').innerText.includes('hello from the fake runner')`)
	if got := page.eval(t, `document.getElementById('state').textContent`); got != "running" {
		t.Fatalf("state after the event = %q", got)
	}
	png := page.screenshot(t)
	dir := os.Getenv("SPINE_SCREENSHOT_DIR")
	if dir == "" {
		dir = t.TempDir()
	}
	path := filepath.Join(dir, "session-page.png")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s (%d bytes)", path, len(png))
}

func chromiumBinary() string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// browser speaks the DevTools protocol over --remote-debugging-pipe: JSON
// messages separated by NUL bytes on fds 3 (to Chromium) and 4 (from it).
type browser struct {
	cmd     *exec.Cmd
	w       io.WriteCloser
	mu      sync.Mutex
	nextID  int
	pending map[int]chan cdpReply
	done    chan struct{}
}

type cdpReply struct {
	Result json.RawMessage
	Error  *struct{ Message string }
}

func startChromium(t *testing.T, bin string) *browser {
	t.Helper()
	toChrome, ourEnd, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	fromChrome, theirEnd, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
		"--no-first-run", "--remote-debugging-pipe", "--user-data-dir="+t.TempDir(), "--window-size=1000,800", "about:blank")
	cmd.ExtraFiles = []*os.File{toChrome, theirEnd}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	toChrome.Close()
	theirEnd.Close()
	b := &browser{cmd: cmd, w: ourEnd, pending: map[int]chan cdpReply{}, done: make(chan struct{})}
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

func (b *browser) read(r io.ReadCloser) {
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
			cdpReply
		}
		if json.Unmarshal(msg[:len(msg)-1], &m) != nil || m.ID == 0 {
			continue // an event
		}
		b.mu.Lock()
		ch := b.pending[m.ID]
		delete(b.pending, m.ID)
		b.mu.Unlock()
		if ch != nil {
			ch <- m.cdpReply
		}
	}
}

// call sends one command (to a page when session is set) and waits for its reply.
func (b *browser) call(t *testing.T, session, method string, params any, out any) {
	t.Helper()
	if err := b.try(session, method, params, out); err != nil {
		t.Fatal(err)
	}
}

// try is call that returns what went wrong.
func (b *browser) try(session, method string, params any, out any) error {
	b.mu.Lock()
	b.nextID++
	id := b.nextID
	ch := make(chan cdpReply, 1)
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
	case <-time.After(60 * time.Second):
		return fmt.Errorf("cdp %s: no reply in 60s", method)
	}
}

type tab struct {
	b       *browser
	session string
}

func (b *browser) open(t *testing.T, url string) *tab {
	t.Helper()
	var target struct{ TargetID string }
	b.call(t, "", "Target.createTarget", map[string]any{"url": url}, &target)
	var att struct{ SessionID string }
	b.call(t, "", "Target.attachToTarget", map[string]any{"targetId": target.TargetID, "flatten": true}, &att)
	return &tab{b: b, session: att.SessionID}
}

// eval evaluates an expression (awaiting a promise) and returns its value as text.
func (p *tab) eval(t *testing.T, expr string) string {
	t.Helper()
	var res struct {
		Result struct {
			Value any `json:"value"`
		} `json:"result"`
		ExceptionDetails *struct{ Text string } `json:"exceptionDetails"`
	}
	p.b.call(t, p.session, "Runtime.evaluate", map[string]any{"expression": expr, "awaitPromise": true, "returnByValue": true}, &res)
	if res.ExceptionDetails != nil {
		t.Fatalf("evaluate %s: %s", expr, res.ExceptionDetails.Text)
	}
	return strings.TrimSpace(fmt.Sprint(res.Result.Value))
}

// await waits, inside the page, until cond holds: it is checked on load
// and on every DOM change, never on a timer of ours.
func (p *tab) await(t *testing.T, cond string) {
	t.Helper()
	js := `new Promise((resolve, reject) => {
	  const ok = () => { try { return !!(` + cond + `); } catch (e) { return false; } };
	  const check = () => { if (ok()) { resolve(true); return true; } return false; };
	  const watch = () => { if (check()) return;
	    new MutationObserver(check).observe(document, {subtree: true, childList: true, characterData: true, attributes: true}); };
	  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', watch); else watch();
	  setTimeout(() => reject(new Error('timed out waiting for: ` + strings.ReplaceAll(cond, "'", `\'`) + `')), 30000);
	})`
	// The first evaluations may race the navigation (about:blank, then the
	// redirect that sets the cookie), which destroys the context they run
	// in: retry until the page is ours.
	for i := 0; ; i++ {
		var probe struct {
			Result struct {
				Value any `json:"value"`
			} `json:"result"`
		}
		err := p.b.try(p.session, "Runtime.evaluate", map[string]any{"returnByValue": true,
			"expression": `location.pathname.startsWith('/ui/remote/') && document.readyState !== 'loading'`}, &probe)
		if (err == nil && probe.Result.Value == true) || i > 300 {
			break
		}
		// A pause inside the page; a navigation may end it early.
		_ = p.b.try(p.session, "Runtime.evaluate", map[string]any{"expression": `new Promise(r => setTimeout(r, 50))`, "awaitPromise": true}, nil)
	}
	if got := p.eval(t, js); got != "true" {
		t.Fatalf("await %s = %s", cond, got)
	}
}

func (p *tab) screenshot(t *testing.T) []byte {
	t.Helper()
	var shot struct{ Data string }
	p.b.call(t, p.session, "Page.captureScreenshot", map[string]any{"format": "png"}, &shot)
	png, err := base64.StdEncoding.DecodeString(shot.Data)
	if err != nil || len(png) < 1000 {
		t.Fatalf("screenshot: %d bytes, %v", len(png), err)
	}
	return png
}
