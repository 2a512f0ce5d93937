package desktop_test

import (
	"strings"
	"testing"

	"github.com/spinehq/spine/desktop"
	"github.com/spinehq/spine/streams"
)

// A task declares the app and workspace it needs; the runner sees them on
// the claim and in its work list, and a follow-up inherits them.
func TestTaskDeclaresAppAndWorkspace(t *testing.T) {
	e := newEnv(t)
	alice := e.member("acme", "alice")
	r := e.runner(alice, "laptop", "laptop")
	sess := e.create(alice, map[string]any{"target": "desktop", "instructions": "x", "app": "codex", "workspace": "/home/alice/api"})
	if w := r.work(); len(w) != 1 || w[0].App != "codex" || w[0].Workspace != "/home/alice/api" {
		t.Fatalf("work = %+v", w)
	}
	c := r.claim(sess.LatestTaskID)
	if c.Task.App != "codex" || c.Task.Workspace != "/home/alice/api" {
		t.Fatalf("claimed task = %+v", c.Task)
	}
	e.must(200, "POST", "/v1/desktop-runner/tasks/"+c.Task.ID+"/complete", r.token, map[string]any{"fence": c.Fence})
	e.must(202, "POST", "/v1/remote-sessions/"+sess.ID+"/messages", alice, map[string]string{"prompt": "and again"})
	if w := r.work(); len(w) != 1 || w[0].App != "codex" || w[0].Workspace != "/home/alice/api" {
		t.Fatalf("follow-up work = %+v", w)
	}
	code, body := e.do("POST", "/v1/remote-sessions", alice, map[string]any{"target": "desktop", "instructions": "x", "app": "vim"})
	wantCode(t, "create with an unknown app", 400, "bad_request", code, body)
	if !strings.Contains(string(body), `claude-code`) {
		t.Fatalf("refusal %s must say which apps exist", body)
	}
}

// A runner refuses a task that asks more than its owner allows: the task
// ends refused and the caller reads the reason; refused needs a reason.
// An app that died ends the task failed.
func TestRunnerRefusesOrFailsATask(t *testing.T) {
	e := newEnv(t)
	alice := e.member("acme", "alice")
	r := e.runner(alice, "laptop", "laptop")
	sess := e.create(alice, map[string]any{"target": "desktop", "instructions": "x", "workspace": "/etc"})
	c := r.claim(sess.LatestTaskID)
	code, body := r.post(c.Task.ID, "complete", map[string]any{"fence": c.Fence, "status": "refused"})
	wantCode(t, "refused without a reason", 400, streams.ReasonMissingField, code, body)
	code, body = r.post(c.Task.ID, "complete", map[string]any{"fence": c.Fence, "status": "exploded"})
	wantCode(t, "an unknown status", 400, streams.ReasonInvalidField, code, body)
	code, body = r.post(c.Task.ID, "complete", map[string]any{"fence": c.Fence, "status": "refused",
		"error": map[string]string{"code": "x"}})
	wantCode(t, "error as an object", 400, "bad_request", code, body)
	reason := "workspace_not_allowed: /etc is not among this runner's workspaces (~/code)"
	code, body = r.post(c.Task.ID, "complete", map[string]any{"fence": c.Fence, "status": "refused", "error": reason})
	if rc := decode[desktop.Receipt](t, body); code != 200 || rc.State != desktop.StateRefused || rc.ReceiptID == "" {
		t.Fatalf("refuse = %d %s", code, body)
	}
	res := e.read(alice, sess.ID, "0")
	if res.Session.State != desktop.StateRefused || !res.Ended || res.Session.Error != reason {
		t.Fatalf("read after refusal = %+v", res.Session)
	}
	if lease, _ := r.post(c.Task.ID, "heartbeat", map[string]any{"fence": c.Fence}); lease != 409 {
		t.Fatalf("heartbeat of a refused task = %d", lease)
	}

	failed := e.create(alice, map[string]any{"target": "desktop", "instructions": "y"})
	fc := r.claim(failed.LatestTaskID)
	code, body = r.post(fc.Task.ID, "complete", map[string]any{"fence": fc.Fence, "status": "failed", "error": "app_failed: claude exited 1"})
	if rc := decode[desktop.Receipt](t, body); code != 200 || rc.State != desktop.StateFailed {
		t.Fatalf("fail = %d %s", code, body)
	}
	if res := e.read(alice, failed.ID, "0"); res.Session.State != desktop.StateFailed || !res.Ended ||
		res.Session.Error != "app_failed: claude exited 1" {
		t.Fatalf("read after failure = %+v", res.Session)
	}
}

// A runner present without the remote_session capability gets a message
// that says so, not one to start a runner (or sign in).
func TestRunnerWithoutRemoteSessionSaysSo(t *testing.T) {
	e := newEnv(t)
	alice := e.member("acme", "alice")
	r := e.runner(alice, "laptop", "laptop-mac")
	r.register("laptop-mac", nil)
	code, body := e.do("POST", "/v1/remote-sessions", alice, map[string]any{"target": "desktop", "instructions": "x"})
	errBody := decode[struct{ Error map[string]string }](t, body)
	if code != 409 || errBody.Error["code"] != "needs_desktop_runner" || errBody.Error["machine"] != "laptop-mac" ||
		!strings.Contains(errBody.Error["action"], "the runner on laptop-mac is running but did not declare the remote_session capability") ||
		strings.Contains(string(body), "sign in") {
		t.Fatalf("create with an incapable runner = %d %s", code, body)
	}
}
