package desktop_test

import (
	"context"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/spinehq/spine/desktop"
)

// localID is an app's session id as the apps make them: a UUID.
const localID = "0b0a5d1e-7c1f-4a59-9d5e-2f6f1d2c3b42"

// A fake runner drives register → events stream → work → claim → heartbeat
// → events → complete over HTTP, and the member reads it back.
func TestRunnerLifecycle(t *testing.T) {
	e := newEnv(t)
	alice := e.member("acme", "alice")
	r := e.runner(alice, "laptop-1", "alice-laptop")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stream := r.events(ctx)
	stream.next(t, "ready", 10*time.Second)

	queuedAt := time.Now()
	sess := e.create(alice, map[string]any{"target": "desktop", "title": "fix the build", "instructions": "run make test"})
	if sess.State != desktop.StateQueued || sess.RunnerID != "laptop-1" || sess.Machine != "alice-laptop" ||
		!strings.HasSuffix(sess.URL, "/ui/remote/"+sess.ID) {
		t.Fatalf("created = %+v", sess)
	}
	ann := decode[map[string]string](t, []byte(stream.next(t, "work_available", time.Second)))
	if ann["taskId"] != sess.LatestTaskID || ann["kind"] != desktop.KindRemoteSession {
		t.Fatalf("announcement = %v", ann)
	}
	t.Logf("work announced %s after create was sent", time.Since(queuedAt))
	work := r.work()
	if len(work) != 1 || work[0].ID != sess.LatestTaskID || work[0].Instructions != "run make test" {
		t.Fatalf("work = %+v", work)
	}

	c := r.claim(sess.LatestTaskID)
	if c.Fence == 0 || c.Task.State != desktop.StateClaimed {
		t.Fatalf("claim = %+v", c)
	}
	if lease := r.heartbeat(c.Task.ID, c.Fence); !lease.LeaseValid || lease.State != desktop.StateRunning || lease.CancelRequested {
		t.Fatalf("heartbeat = %+v", lease)
	}
	evs := []desktop.RunnerEvent{
		{Seq: 1, Type: desktop.EventSessionID, SessionID: localID},
		{Seq: 2, Type: desktop.EventAssistantText, Text: "running the tests"},
	}
	code, body := r.post(c.Task.ID, "events", map[string]any{"fence": c.Fence, "events": evs})
	if rec := decode[desktop.EventsReceipt](t, body); code != 200 || rec.Accepted != 2 || rec.LastSeq != 2 {
		t.Fatalf("events = %d %s", code, body)
	}
	// A retried post: seq 2 again is a duplicate, seq 3 and 4 are new.
	evs = []desktop.RunnerEvent{{Seq: 2, Type: desktop.EventAssistantText, Text: "running the tests"},
		{Seq: 3, Type: desktop.EventUsage, Usage: []byte(`{"inputTokens":10}`)},
		{Seq: 4, Type: desktop.EventTerminal, Status: "done"}}
	code, body = r.post(c.Task.ID, "events", map[string]any{"fence": c.Fence, "events": evs})
	if rec := decode[desktop.EventsReceipt](t, body); code != 200 || rec.Accepted != 2 || rec.Duplicates != 1 || rec.LastSeq != 4 {
		t.Fatalf("events retry = %d %s", code, body)
	}
	code, body = r.post(c.Task.ID, "complete", map[string]any{"fence": c.Fence})
	rec := decode[desktop.Receipt](t, body)
	if code != 200 || rec.ReceiptID == "" || rec.State != desktop.StateDone {
		t.Fatalf("complete = %d %s", code, body)
	}
	// The receipt is durable: completing again answers the same one.
	if _, again := r.post(c.Task.ID, "complete", map[string]any{"fence": c.Fence}); decode[desktop.Receipt](t, again) != rec {
		t.Fatalf("second complete = %s, want %+v", again, rec)
	}

	res := e.read(alice, sess.ID, "0")
	kinds := []string{}
	for _, en := range res.Entries {
		kinds = append(kinds, en.Kind)
	}
	if got := strings.Join(kinds, ","); got != "prompt,session_id,assistant_text,usage,terminal,end" {
		t.Fatalf("transcript kinds = %s", got)
	}
	if end := res.Entries[5]; end.Source != desktop.SourceTask || string(end.Data) != `{"status":"done"}` {
		t.Fatalf("end entry = %+v", end)
	}
	if res.Session.State != desktop.StateDone || res.Session.LocalSessionID != localID || !res.Ended || res.More {
		t.Fatalf("read = %+v", res)
	}
	// The cursor pages: two at a time gives the same six entries, in order, then none.
	var paged []desktop.Entry
	since := "0"
	for range 3 {
		page := decode[desktop.ReadResult](t, e.must(200, "GET", "/v1/remote-sessions/"+sess.ID+"?limit=2&since="+url.QueryEscape(since), alice, nil))
		if len(page.Entries) != 2 || page.More != (len(paged) < 4) {
			t.Fatalf("page after %d = %+v", len(paged), page)
		}
		paged, since = append(paged, page.Entries...), page.Next
	}
	if last := e.read(alice, sess.ID, since); len(last.Entries) != 0 || last.More || !last.Ended || last.Next != since {
		t.Fatalf("read past the end = %+v", last)
	}
	for i := range paged {
		if paged[i].Kind != res.Entries[i].Kind || paged[i].Seq != res.Entries[i].Seq {
			t.Fatalf("paged entry %d = %+v, want %+v", i, paged[i], res.Entries[i])
		}
	}
	for _, bad := range []string{"2", "c1.nope", "c1." + strings.Repeat("A", 40)} {
		code, body := e.do("GET", "/v1/remote-sessions/"+sess.ID+"?since="+url.QueryEscape(bad), alice, nil)
		wantCode(t, "since="+bad, 400, "bad_request", code, body)
	}

	// A follow-up is a new task for the same machine and local session.
	send := decode[desktop.SendReceipt](t, e.must(202, "POST", "/v1/remote-sessions/"+sess.ID+"/messages", alice,
		map[string]string{"prompt": "now push it"}))
	if send.State != "accepted" || send.MessageID == "" || send.MessageID == sess.LatestTaskID {
		t.Fatalf("send = %+v", send)
	}
	stream.next(t, "work_available", time.Second)
	work = r.work()
	if len(work) != 1 || work[0].ID != send.MessageID || work[0].LocalSessionID != localID || work[0].RunnerID != "laptop-1" {
		t.Fatalf("follow-up work = %+v", work)
	}
	list := decode[desktop.ListResult](t, e.must(200, "GET", "/v1/remote-sessions?target=desktop", alice, nil))
	if len(list.Sessions) != 1 || list.Sessions[0].Tasks != 2 || list.Sessions[0].State != desktop.StateQueued ||
		len(list.Runners) != 1 || !list.Runners[0].Present || list.Runners[0].Machine != "alice-laptop" {
		t.Fatalf("list = %+v", list)
	}
}

// A session_id event whose id is not an app's session id (a UUID) is a
// 400 invalid_id, and nothing of its post is stored: a follow-up puts the
// session's local id on the next runner's app command line. It was taken
// (only its length was checked), and the follow-up task carried
// "--dangerously-skip-permissions" as its localSessionId.
func TestRunnerSessionIDMustBeAnAppsSessionID(t *testing.T) {
	e := newEnv(t)
	alice := e.member("acme", "alice")
	r := e.runner(alice, "laptop-1", "alice-laptop")
	sess := e.create(alice, map[string]any{"target": "desktop", "instructions": "x"})
	c := r.claim(sess.LatestTaskID)
	for _, bad := range []string{"--dangerously-skip-permissions", "local-42", localID + " --last", localID[:35], "../" + localID[3:], strings.Repeat("z", 300)} {
		evs := []desktop.RunnerEvent{{Seq: 1, Type: desktop.EventAssistantText, Text: "hi"},
			{Seq: 2, Type: desktop.EventSessionID, SessionID: bad}}
		code, body := r.post(c.Task.ID, "events", map[string]any{"fence": c.Fence, "events": evs})
		wantCode(t, "sessionId "+bad, 400, "invalid_id", code, body)
		if strings.Contains(string(body), bad) {
			t.Errorf("the refusal echoes the id: %s", body)
		}
	}
	if res := e.read(alice, sess.ID, "0"); len(res.Entries) != 1 || res.Session.LocalSessionID != "" {
		t.Fatalf("read after refused posts = %+v", res)
	}
	evs := []desktop.RunnerEvent{{Seq: 1, Type: desktop.EventSessionID, SessionID: strings.ToUpper(localID)}}
	if code, body := r.post(c.Task.ID, "events", map[string]any{"fence": c.Fence, "events": evs}); code != 200 {
		t.Fatalf("a UUID (upper case) = %d %s", code, body)
	}
}

// A runner sees only the work kinds it declared.
func TestRunnerSeesOnlyDeclaredKinds(t *testing.T) {
	e := newEnv(t)
	alice := e.member("acme", "alice")
	r := e.runner(alice, "auto-only", "old-laptop")
	r.register("old-laptop", []string{"automation"})
	code, body := e.do("POST", "/v1/remote-sessions", alice, map[string]any{"target": "desktop", "instructions": "hi"})
	if code != 409 || !strings.Contains(string(body), `"code":"needs_desktop_runner"`) {
		t.Fatalf("create for a runner without remote_session = %d %s", code, body)
	}
	deliverBy := time.Now().Add(time.Hour)
	sess := e.create(alice, map[string]any{"target": "desktop", "instructions": "hi", "deliverBy": deliverBy})
	if w := r.work(); len(w) != 0 {
		t.Fatalf("work for an automation-only runner = %+v", w)
	}
	if code, body := e.do("POST", "/v1/desktop-runner/tasks/"+sess.LatestTaskID+"/claim", r.token, nil); code != 409 ||
		!strings.Contains(string(body), `"code":"not_claimable"`) {
		t.Fatalf("claim = %d %s", code, body)
	}
	r.register("old-laptop", []string{"automation", desktop.KindRemoteSession}) // inventory applies at once
	if w := r.work(); len(w) != 1 {
		t.Fatalf("work after declaring remote_session = %+v", w)
	}
}
