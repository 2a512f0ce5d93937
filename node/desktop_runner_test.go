package node_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spinehq/spine/accounting"
	"github.com/spinehq/spine/desktop"
	"github.com/spinehq/spine/internal/spinetest"
	"github.com/spinehq/spine/recorder"
	"github.com/spinehq/spine/streams"
)

// httpRunner is a desktop runner over HTTP against a node: its token, its
// id, and the claims it won.
type httpRunner struct {
	f      *fixture
	id     string
	token  string
	member string // the member token that minted it
}

func (f *fixture) desktopRunner(member, runnerID string) *httpRunner {
	f.t.Helper()
	tok := decode[desktop.RunnerToken](f.t, f.mustDo(201, "POST", "/v1/desktop-runner/tokens", member, map[string]string{"runnerId": runnerID}))
	f.mustDo(200, "POST", "/v1/desktop-runner/register", tok.Token, desktop.Inventory{Machine: runnerID + "-host",
		Apps: []string{"claude-code"}, Capabilities: []string{desktop.KindRemoteSession}, ProtocolVersion: 1})
	return &httpRunner{f: f, id: runnerID, token: tok.Token, member: member}
}

func (r *httpRunner) claim(taskID string) desktop.Claim {
	r.f.t.Helper()
	return decode[desktop.Claim](r.f.t, r.f.mustDo(200, "POST", "/v1/desktop-runner/tasks/"+taskID+"/claim", r.token, nil))
}

func (r *httpRunner) complete(c desktop.Claim, status, reason string) {
	r.f.t.Helper()
	r.f.mustDo(200, "POST", "/v1/desktop-runner/tasks/"+c.Task.ID+"/complete", r.token,
		map[string]any{"fence": c.Fence, "status": status, "error": reason})
}

// runnerStart is a session.start the runner sends for a task: owner left
// to the token, workerId claimed as something else.
func runnerStart(session, taskID string) *streams.Envelope {
	e := spinetest.Start(session)
	e.Owner, e.TaskID, e.WorkerID = nil, taskID, "not-my-machine"
	return e
}

func usageEnd(session string) *streams.Envelope {
	e := spinetest.End(session, "done", "claude-sonnet-4-5", "")
	cost := 0.25
	e.Usage, e.TotalCost, e.Billing = &streams.Usage{InputTokens: 100, OutputTokens: 20}, &cost, "metered"
	return e
}

// A runner token records the app session of a task it holds through the
// session ingest, as its member and with its own id as workerId; it reads
// back only what it recorded; the session's router-call row puts the work
// in the cost report.
func TestRunnerRecordsItsTasksSession(t *testing.T) {
	f := newFixture(t)
	alice := f.token("acme", "alice")
	r := f.desktopRunner(alice, "alice-laptop")
	sess := decode[desktop.Session](t, f.mustDo(201, "POST", "/v1/remote-sessions", alice,
		map[string]any{"target": "desktop", "instructions": "fix the tests"}))
	c := r.claim(sess.LatestTaskID)

	res := f.ingest(r.token, runnerStart("rs1", c.Task.ID), spinetest.Text("rs1", 1, "on it\n"),
		spinetest.Command("rs1", 2, "make test"), usageEnd("rs1")).Results
	for _, x := range res {
		if x.Status != 202 {
			t.Fatalf("runner ingest = %+v", res)
		}
	}
	f.waitCaughtUp()
	got := decode[recorder.Session](t, f.mustDo(200, "GET", "/v1/sessions/rs1", r.token, nil))
	if got.Org != "acme" || got.Member != "alice" || got.WorkerID != "alice-laptop" || got.TaskID != c.Task.ID || !got.Ended() {
		t.Fatalf("recorded session = %+v", got)
	}
	if mine := decode[recorder.Session](t, f.mustDo(200, "GET", "/v1/sessions/rs1", alice, nil)); mine.WorkerID != "alice-laptop" {
		t.Fatalf("the member reads %+v", mine)
	}
	if tr := f.mustDo(200, "GET", "/v1/sessions/rs1/transcript", r.token, nil); !bytes.Contains(tr, []byte("on it")) {
		t.Fatalf("transcript = %s", tr)
	}
	if calls := f.routerCalls("rs1"); len(calls) != 1 || calls[0].Billing != "metered" || calls[0].Cost == nil || *calls[0].Cost != 0.25 {
		t.Fatalf("router calls of the runner's session = %+v", calls)
	}
	sum := decode[accounting.Summary](t, f.mustDo(200, "GET", "/v1/cost/summary?from=2026-11-01&to=2026-11-30&groupBy=session", alice, nil))
	if len(sum.Rows) != 1 || sum.Rows[0].Key != "rs1" || sum.Rows[0].Metered.Calls != 1 || sum.Rows[0].Metered.Dollars.String() != "0.25" {
		t.Fatalf("cost summary = %+v", sum)
	}

	// What the runner did not record is a session that does not exist.
	f.ingest(alice, spinetest.Start("mine"))
	f.waitCaughtUp()
	_, missing := f.do("GET", "/v1/sessions/nope", r.token, nil)
	for _, path := range []string{"/v1/sessions/mine", "/v1/sessions/mine/transcript"} {
		code, body := f.do("GET", path, r.token, nil)
		if code != 404 || !bytes.Equal(body, missing) {
			t.Fatalf("runner reading %s = %d %s, missing = %s", path, code, body, missing)
		}
	}
	// Nor can it write to it: the answer of a session never started.
	res = f.ingest(r.token, spinetest.Text("mine", 1, "injected\n"), spinetest.Text("nope", 1, "x\n")).Results
	if res[0].Status != 404 || res[0].Error == nil || res[0].Error.Code != streams.ReasonUnknownSession ||
		res[1].Status != 404 || strings.Replace(res[0].Error.Message, "mine", "nope", 1) != res[1].Error.Message {
		t.Fatalf("runner writing to its member's own session = %+v", res)
	}
	f.waitCaughtUp()
	if tr := f.mustDo(200, "GET", "/v1/sessions/mine/transcript", alice, nil); bytes.Contains(tr, []byte("injected")) {
		t.Fatalf("the runner wrote into the member's session: %s", tr)
	}
}

// A runner's session.start must name a task the runner holds now: another
// member's task and a missing one are one 404 unknown_task; its member's
// task it does not hold is 409 task_not_held; no taskId is 400. A runner
// sends session envelopes only; every other member route and /mcp refuse
// its token.
func TestRunnerIngestIsHeldToItsTasks(t *testing.T) {
	f := newFixture(t)
	alice, bob := f.token("acme", "alice"), f.token("acme", "bob")
	r := f.desktopRunner(alice, "alice-laptop")
	f.desktopRunner(bob, "bob-laptop")
	create := func(tok string) desktop.Session {
		return decode[desktop.Session](t, f.mustDo(201, "POST", "/v1/remote-sessions", tok,
			map[string]any{"target": "desktop", "instructions": "x"}))
	}
	bobs, queued, done := create(bob), create(alice), create(alice)
	c := r.claim(done.LatestTaskID)
	r.complete(c, "done", "")

	noTask := runnerStart("s-none", "")
	disc := spinetest.Disconnect("alice-laptop", "gone")
	res := f.ingest(r.token, runnerStart("s-bob", bobs.LatestTaskID), runnerStart("s-missing", "dt-doesnotexist"),
		runnerStart("s-queued", queued.LatestTaskID), runnerStart("s-done", done.LatestTaskID), noTask, disc).Results
	want := []struct {
		status int
		code   string
	}{{404, "unknown_task"}, {404, "unknown_task"}, {409, "task_not_held"}, {409, "task_not_held"},
		{400, streams.ReasonMissingField}, {403, "forbidden"}}
	for i, w := range want {
		if res[i].Status != w.status || res[i].Error == nil || res[i].Error.Code != w.code {
			t.Errorf("envelope %d = %+v, want %d %s", i, res[i], w.status, w.code)
		}
	}
	if *res[0].Error != *res[1].Error {
		t.Errorf("another member's task %+v differs from a missing one %+v", res[0].Error, res[1].Error)
	}
	f.waitCaughtUp()
	for _, id := range []string{"s-bob", "s-missing", "s-queued", "s-done", "s-none"} {
		if code, _ := f.do("GET", "/v1/sessions/"+id, alice, nil); code != 404 {
			t.Errorf("refused start %s was recorded", id)
		}
	}

	for _, route := range [][2]string{{"GET", "/v1/sessions"}, {"GET", "/v1/remote-sessions"},
		{"GET", "/v1/remote-sessions/" + queued.ID}, {"POST", "/v1/remote-sessions"}, {"POST", "/v1/sessions/s1/cancel"},
		{"GET", "/v1/runs/r1/steps"}, {"GET", "/v1/cost/summary"}, {"GET", "/v1/deadletters"},
		{"GET", "/v1/desktop-runner/tokens"}, {"POST", "/mcp"}} {
		code, body := f.do(route[0], route[1], r.token, []byte(`{}`))
		if code != 401 {
			t.Errorf("runner token on %s %s = %d %s", route[0], route[1], code, body)
		}
	}
	// A revoked runner token records nothing.
	toks := decode[struct{ Tokens []desktop.RunnerToken }](t, f.mustDo(200, "GET", "/v1/desktop-runner/tokens", alice, nil)).Tokens
	f.mustDo(204, "DELETE", "/v1/desktop-runner/tokens/"+toks[0].TokenID, alice, nil)
	if code, body := f.do("POST", "/v1/ingest", r.token, envelopes(t, runnerStart("s-late", queued.LatestTaskID))); code != 401 {
		t.Fatalf("revoked runner token on ingest = %d %s", code, body)
	}
}

// The envelopes after a runner's refused session.start in its batch are
// refused with the start's code: task_not_held for a task it does not hold,
// session_exists for a start naming another task than the one an earlier
// batch linked the session to. They were not: the first chunk was the 404
// of a session never started, and the second was taken (202) into the
// session of the other task.
func TestRunnerRefusedStartRefusesTheRestOfItsSession(t *testing.T) {
	f := newFixture(t)
	alice := f.token("acme", "alice")
	r := f.desktopRunner(alice, "alice-laptop")
	create := func() desktop.Session {
		return decode[desktop.Session](t, f.mustDo(201, "POST", "/v1/remote-sessions", alice,
			map[string]any{"target": "desktop", "instructions": "x", "runnerId": r.id}))
	}
	held, queued := create(), create()
	c := r.claim(held.LatestTaskID)
	if res := f.ingest(r.token, runnerStart("s-held", c.Task.ID), spinetest.Text("s-held", 1, "mine\n")).Results; res[1].Status != 202 {
		t.Fatalf("the held task's session = %+v", res)
	}
	res := f.ingest(r.token, runnerStart("s-queued", queued.LatestTaskID), spinetest.Text("s-queued", 1, "not held\n"),
		usageEnd("s-queued"), runnerStart("s-held", queued.LatestTaskID), spinetest.Text("s-held", 2, "smuggled\n")).Results
	want := []struct {
		status int
		code   string
	}{{409, "task_not_held"}, {409, "task_not_held"}, {409, "task_not_held"}, {409, "session_exists"}, {409, "session_exists"}}
	for i, w := range want {
		if res[i].Status != w.status || res[i].Error == nil || res[i].Error.Code != w.code {
			t.Errorf("envelope %d = %+v, want %d %s", i, res[i], w.status, w.code)
		}
	}
	f.waitCaughtUp()
	if code, _ := f.do("GET", "/v1/sessions/s-queued", alice, nil); code != 404 {
		t.Errorf("the refused start's session was recorded")
	}
	if tr := f.mustDo(200, "GET", "/v1/sessions/s-held/transcript", alice, nil); bytes.Contains(tr, []byte("smuggled")) ||
		!bytes.Contains(tr, []byte("mine")) {
		t.Fatalf("transcript of s-held = %s", tr)
	}
}

// readAll pages through a remote session's transcript limit entries at a
// time from since, and returns the entries and the last cursor.
func (f *fixture) readRemote(token, id, since string, limit int) desktop.ReadResult {
	f.t.Helper()
	return decode[desktop.ReadResult](f.t, f.mustDo(200, "GET",
		fmt.Sprintf("/v1/remote-sessions/%s?since=%s&limit=%d", id, url.QueryEscape(since), limit), token, nil))
}

// send queues a follow-up and returns its task.
func (f *fixture) send(token, id, prompt string) string {
	f.t.Helper()
	return decode[desktop.SendReceipt](f.t, f.mustDo(202, "POST", "/v1/remote-sessions/"+id+"/messages", token,
		map[string]string{"prompt": prompt})).MessageID
}

func entryLine(e desktop.Entry) string {
	s := e.Source + ":" + e.Kind
	if e.Text != "" {
		s += "=" + strings.TrimSpace(e.Text)
	}
	if e.Kind == "event" {
		var d struct {
			Action string
			Detail struct{ Command string }
			Result struct{ ExitCode *int }
		}
		_ = json.Unmarshal(e.Data, &d)
		s += fmt.Sprintf("=%s %s exit %d", d.Action, d.Detail.Command, *d.Result.ExitCode)
	}
	return s
}

// remoteSession.read serves each task's transcript from the app session the
// runner recorded for it (stdout, stderr and events, readable apart), in
// task order across follow-ups, with the task's prompt and end around it;
// a task that never recorded a session reads with its reason; the cursor
// pages without loss or repeat, also over content that arrives later; the
// read names the recorded sessions.
func TestRemoteSessionReadServesRecordedSessions(t *testing.T) {
	f := newFixture(t)
	alice, bob := f.token("acme", "alice"), f.token("acme", "bob")
	r := f.desktopRunner(alice, "alice-laptop")
	sess := decode[desktop.Session](t, f.mustDo(201, "POST", "/v1/remote-sessions", alice,
		map[string]any{"target": "desktop", "instructions": "fix the tests"}))
	c1 := r.claim(sess.LatestTaskID)
	f.ingest(r.token, runnerStart("run-1", c1.Task.ID), spinetest.Text("run-1", 1, "looking\n"))
	f.mustDo(200, "POST", "/v1/desktop-runner/tasks/"+c1.Task.ID+"/events", r.token, map[string]any{"fence": c1.Fence,
		"events": []desktop.RunnerEvent{{Seq: 1, Type: desktop.EventSessionID, SessionID: "0b0a5d1e-7c1f-4a59-9d5e-2f6f1d2c3b41"},
			{Seq: 2, Type: desktop.EventAssistantText, Text: "the runner's copy of the answer"}}})
	f.waitCaughtUp()
	first := f.readRemote(alice, sess.ID, "0", 1000)
	if first.Ended || len(first.RecordedSessions) != 1 || first.RecordedSessions[0].SessionID != "run-1" {
		t.Fatalf("first read = %+v", first)
	}

	// More of run-1 arrives after the read; then it ends and the task is done.
	f.ingest(r.token, spinetest.Command("run-1", 2, "make test"), spinetest.Stderr("run-1", 3, "warning: slow\n"),
		spinetest.Text("run-1", 4, "fixed\n"), usageEnd("run-1"))
	r.complete(c1, "done", "")
	// A follow-up resumes the same local session: a new task, a new spine session.
	c2 := r.claim(f.send(alice, sess.ID, "now push"))
	f.ingest(r.token, runnerStart("run-2", c2.Task.ID), spinetest.Text("run-2", 1, "pushed\n"), usageEnd("run-2"))
	r.complete(c2, "done", "")
	// A third asks for more than the runner allows: refused, no session.
	c3 := r.claim(f.send(alice, sess.ID, "and deploy from /etc"))
	r.complete(c3, "refused", "workspace_not_allowed: /etc")
	f.waitCaughtUp()

	want := []string{"task:prompt=fix the tests", "session:stdout=looking", "session:event=command make test exit 0",
		"session:stderr=warning: slow", "session:stdout=fixed", "task:session_id", "task:end",
		"task:prompt=now push", "session:stdout=pushed", "task:end",
		"task:prompt=and deploy from /etc", "task:end=workspace_not_allowed: /etc"}
	whole := f.readRemote(alice, sess.ID, "0", 1000)
	var got []string
	for _, e := range whole.Entries {
		got = append(got, entryLine(e))
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") || !whole.Ended || whole.More {
		t.Fatalf("whole read:\n%s\nwant:\n%s\n(%+v)", strings.Join(got, "\n"), strings.Join(want, "\n"), whole)
	}
	if len(whole.Next) > 40 {
		t.Fatalf("cursor after everything is %d bytes (%s): ended tasks must fold", len(whole.Next), whole.Next)
	}
	if rs := whole.RecordedSessions; len(rs) != 2 || rs[0].SessionID != "run-1" || rs[0].TaskID != c1.Task.ID ||
		rs[1].SessionID != "run-2" || rs[1].TaskID != c2.Task.ID || !rs[0].Ended || !rs[1].Ended {
		t.Fatalf("recorded sessions = %+v", rs)
	}
	for _, rs := range whole.RecordedSessions {
		f.mustDo(200, "GET", "/v1/sessions/"+rs.SessionID, alice, nil)
	}

	// Read on from the first read's cursor: exactly what came after it.
	var later []string
	since := first.Next
	for {
		page := f.readRemote(alice, sess.ID, since, 1000)
		for _, e := range page.Entries {
			later = append(later, entryLine(e))
		}
		since = page.Next
		if !page.More {
			break
		}
	}
	var firstLines []string
	for _, e := range first.Entries {
		firstLines = append(firstLines, entryLine(e))
	}
	all := append(firstLines, later...)
	slices.Sort(all)
	if sorted := slices.Sorted(slices.Values(want)); !slices.Equal(all, sorted) {
		t.Fatalf("first read then on: %q, want the entries of the whole read %q", all, sorted)
	}
	// One entry at a time: the same entries, none twice, none lost.
	var paged []string
	since = "0"
	for range 2 * len(want) {
		page := f.readRemote(alice, sess.ID, since, 1)
		for _, e := range page.Entries {
			paged = append(paged, entryLine(e))
		}
		since = page.Next
		if !page.More {
			break
		}
	}
	if strings.Join(paged, "\n") != strings.Join(want, "\n") {
		t.Fatalf("paged one at a time:\n%s", strings.Join(paged, "\n"))
	}

	// Another member reads the one 404 of a session that does not exist.
	code, theirs := f.do("GET", "/v1/remote-sessions/"+sess.ID, bob, nil)
	_, missing := f.do("GET", "/v1/remote-sessions/rs-nope", bob, nil)
	if code != 404 || !bytes.Equal(theirs, missing) {
		t.Fatalf("bob reading alice's session = %d %s, missing = %s", code, theirs, missing)
	}
}

// An open session page hears of new content in the app session recorded
// for its task, though the task itself did not change.
func TestSessionPageHearsTheRecordedSession(t *testing.T) {
	f := newFixture(t)
	alice := f.token("acme", "alice")
	r := f.desktopRunner(alice, "alice-laptop")
	sess := decode[desktop.Session](t, f.mustDo(201, "POST", "/v1/remote-sessions", alice,
		map[string]any{"target": "desktop", "instructions": "x"}))
	c := r.claim(sess.LatestTaskID)
	f.ingest(r.token, runnerStart("live-1", c.Task.ID))
	f.waitCaughtUp()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, events := f.openEvents(ctx, "/ui/remote/"+sess.ID+"/events", alice)
	nextEvent(t, events, "ready")
	f.ingest(r.token, spinetest.Text("live-1", 1, "still working\n"))
	nextEvent(t, events, "change")
}

// A session names a task by taskId alone only when the runner holding the
// task started it: a member token's start with the task's id (any taskId
// it likes) is not the task's transcript (it was: read served it).
func TestRecordedSessionIsTheRunnersLink(t *testing.T) {
	f := newFixture(t)
	alice := f.token("acme", "alice")
	r := f.desktopRunner(alice, "alice-laptop")
	sess := decode[desktop.Session](t, f.mustDo(201, "POST", "/v1/remote-sessions", alice,
		map[string]any{"target": "desktop", "instructions": "x"}))
	c := r.claim(sess.LatestTaskID)
	forged := spinetest.Start("forged")
	forged.TaskID, forged.WorkerID = c.Task.ID, "alice-laptop"
	f.ingest(alice, forged, spinetest.Text("forged", 1, "not the runner's\n"), usageEnd("forged"))
	f.ingest(r.token, runnerStart("real", c.Task.ID), spinetest.Text("real", 1, "the runner's\n"), usageEnd("real"))
	r.complete(c, "done", "")
	f.waitCaughtUp()
	res := f.readRemote(alice, sess.ID, "0", 1000)
	var lines []string
	for _, e := range res.Entries {
		lines = append(lines, entryLine(e))
	}
	if len(res.RecordedSessions) != 1 || res.RecordedSessions[0].SessionID != "real" ||
		strings.Join(lines, "|") != "task:prompt=x|session:stdout=the runner's|task:end" || !res.Ended {
		t.Fatalf("read = %q %+v", lines, res)
	}
}

// Two runners of one member: each writes and reads only the sessions it
// recorded for its own tasks; a start for a task the other holds is
// task_not_held and never reaches that task's read; a session linked to
// one task cannot be started again for another (session id taken), and a
// session of one task is not read in another remote session.
func TestRunnersOfOneMemberAreKeptApart(t *testing.T) {
	f := newFixture(t)
	alice := f.token("acme", "alice")
	r1, r2 := f.desktopRunner(alice, "alice-laptop"), f.desktopRunner(alice, "alice-desktop")
	create := func(runner string) desktop.Session {
		return decode[desktop.Session](t, f.mustDo(201, "POST", "/v1/remote-sessions", alice,
			map[string]any{"target": "desktop", "instructions": "on " + runner, "runnerId": runner}))
	}
	a, b, other := create(r1.id), create(r2.id), create(r1.id)
	ca, cb, co := r1.claim(a.LatestTaskID), r2.claim(b.LatestTaskID), r1.claim(other.LatestTaskID)
	f.ingest(r1.token, runnerStart("s-a", ca.Task.ID), spinetest.Text("s-a", 1, "r1 on a\n"))
	f.ingest(r2.token, runnerStart("s-b", cb.Task.ID), spinetest.Text("s-b", 1, "r2 on b\n"))
	f.waitCaughtUp()

	// r2 neither writes to nor reads r1's session: the answers of one never started.
	usage := &streams.Envelope{V: 1, Type: streams.TypeSessionUsage, ID: "s-a-u1", At: time.Now().UTC(), SessionID: "s-a",
		Usage: &streams.Usage{InputTokens: 1}}
	res := f.ingest(r2.token, spinetest.Text("s-a", 2, "r2 injected\n"), spinetest.Text("s-never", 1, "x\n"), usage).Results
	if res[0].Status != 404 || res[0].Error == nil || res[0].Error.Code != streams.ReasonUnknownSession ||
		strings.Replace(res[0].Error.Message, "s-a", "s-never", 1) != res[1].Error.Message || res[2].Status != 404 {
		t.Fatalf("r2 writing to r1's session = %+v", res)
	}
	_, missing := f.do("GET", "/v1/sessions/s-never", r2.token, nil)
	for _, path := range []string{"/v1/sessions/s-a", "/v1/sessions/s-a/transcript"} {
		if code, body := f.do("GET", path, r2.token, nil); code != 404 || !bytes.Equal(body, missing) {
			t.Fatalf("r2 reading %s = %d %s, missing = %s", path, code, body, missing)
		}
	}
	// r1 starts a session for r2's task: refused, and b's read never shows it.
	res = f.ingest(r1.token, runnerStart("s-steal", cb.Task.ID), spinetest.Text("s-steal", 1, "r1 on b\n")).Results
	if res[0].Status != 409 || res[0].Error.Code != "task_not_held" {
		t.Fatalf("r1's start for r2's task = %+v", res)
	}
	// r1 records s-a again for its other task: the id is taken by a's task.
	res = f.ingest(r1.token, runnerStart("s-a", co.Task.ID)).Results
	if res[0].Status != 409 || res[0].Error.Code != "session_exists" {
		t.Fatalf("s-a started again for another task = %+v", res)
	}
	f.ingest(r1.token, runnerStart("s-o", co.Task.ID), spinetest.Text("s-o", 1, "r1 on other\n"))
	f.waitCaughtUp()
	for sess, want := range map[string]string{a.ID: "s-a=r1 on a", b.ID: "s-b=r2 on b", other.ID: "s-o=r1 on other"} {
		page := f.readRemote(alice, sess, "0", 1000)
		var got []string
		for _, e := range page.Entries {
			if e.Source == desktop.SourceSession {
				got = append(got, e.SessionID+"="+strings.TrimSpace(e.Text))
			}
		}
		if strings.Join(got, "|") != want || len(page.RecordedSessions) != 1 {
			t.Errorf("read of %s = %q (%+v), want %s", sess, got, page.RecordedSessions, want)
		}
	}
}

// Before the recorder has projected a runner's session, another runner of
// the same member still cannot write to it: the door holds a runner to the
// sessions linked to it, and the link is stored before the start is
// published (the recorder is held here by a lock on its checkpoint). It
// could: the door looked only at projected rows, and "r2 injected" was
// recorded in r1's session.
func TestRunnerCannotWriteAnotherRunnersUnprojectedSession(t *testing.T) {
	f := newFixture(t)
	alice := f.token("acme", "alice")
	r1, r2 := f.desktopRunner(alice, "alice-laptop"), f.desktopRunner(alice, "alice-desktop")
	sess := decode[desktop.Session](t, f.mustDo(201, "POST", "/v1/remote-sessions", alice,
		map[string]any{"target": "desktop", "instructions": "x", "runnerId": r1.id}))
	c := r1.claim(sess.LatestTaskID)
	ctx := context.Background()
	hold, err := f.n.Pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := hold.Exec(ctx, `INSERT INTO projector_checkpoints (name, last_seq) VALUES ('recorder', 0) ON CONFLICT DO NOTHING`); err != nil {
		t.Fatal(err)
	}
	if _, err := hold.Exec(ctx, `SELECT 1 FROM projector_checkpoints WHERE name = 'recorder' FOR UPDATE`); err != nil {
		t.Fatal(err)
	}
	res := f.ingest(r1.token, runnerStart("s-1", c.Task.ID), spinetest.Text("s-1", 1, "r1\n")).Results
	res = append(res, f.ingest(r2.token, spinetest.Text("s-1", 2, "r2 injected\n"), usageEnd("s-1")).Results...)
	var projected int
	if err := f.n.Pool.QueryRow(ctx, `SELECT count(*) FROM sessions WHERE id = 's-1'`).Scan(&projected); err != nil {
		t.Fatal(err)
	}
	if err := hold.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if projected != 0 {
		t.Fatalf("the recorder projected s-1 while held")
	}
	if res[0].Status != 202 || res[1].Status != 202 || res[2].Status != 404 || res[3].Status != 404 ||
		res[2].Error.Code != streams.ReasonUnknownSession {
		t.Fatalf("results = %+v", res)
	}
	f.waitCaughtUp()
	if tr := f.mustDo(200, "GET", "/v1/sessions/s-1/transcript", r1.token, nil); bytes.Contains(tr, []byte("injected")) ||
		!bytes.Contains(tr, []byte("r1")) {
		t.Fatalf("transcript of s-1 = %s", tr)
	}
}

// holdRecorder keeps the recorder from committing until the returned func
// runs: a lock on its checkpoint row.
func (f *fixture) holdRecorder() func() {
	f.t.Helper()
	ctx := context.Background()
	hold, err := f.n.Pool.Begin(ctx)
	if err != nil {
		f.t.Fatal(err)
	}
	for _, sql := range []string{`INSERT INTO projector_checkpoints (name, last_seq) VALUES ('recorder', 0) ON CONFLICT DO NOTHING`,
		`SELECT 1 FROM projector_checkpoints WHERE name = 'recorder' FOR UPDATE`} {
		if _, err := hold.Exec(ctx, sql); err != nil {
			f.t.Fatal(err)
		}
	}
	return func() {
		if err := hold.Rollback(ctx); err != nil {
			f.t.Fatal(err)
		}
	}
}

// A runner that starts a session id its member started first, both before
// the recorder projected either, gets past the door (the member's start
// is not projected yet), but the recorder, in log order, takes nothing of
// the runner's into the member's session: its chunk and end are dead
// letters, and the session has no router-call row of the runner's. It
// did: "runner's" was in the member's transcript and the runner's end
// made the row.
func TestRunnerNeverWritesItsMembersSession(t *testing.T) {
	f := newFixture(t)
	alice := f.token("acme", "alice")
	r := f.desktopRunner(alice, "alice-laptop")
	sess := decode[desktop.Session](t, f.mustDo(201, "POST", "/v1/remote-sessions", alice,
		map[string]any{"target": "desktop", "instructions": "x"}))
	c := r.claim(sess.LatestTaskID)
	release := f.holdRecorder()
	mine := spinetest.Start("shared")
	mine.WorkerID = "alice-desk"
	f.ingest(alice, mine, spinetest.Text("shared", 1, "member's\n"))
	res := f.ingest(r.token, runnerStart("shared", c.Task.ID), spinetest.Text("shared", 2, "runner's\n"), usageEnd("shared")).Results
	release()
	if res[1].Status != 202 || res[2].Status != 202 {
		t.Fatalf("the door took the runner's chunk and end: %+v", res)
	}
	f.waitCaughtUp()
	if tr := f.mustDo(200, "GET", "/v1/sessions/shared/transcript", alice, nil); bytes.Contains(tr, []byte("runner's")) ||
		!bytes.Contains(tr, []byte("member's")) {
		t.Fatalf("member's transcript = %s", tr)
	}
	if got := decode[recorder.Session](t, f.mustDo(200, "GET", "/v1/sessions/shared", alice, nil)); got.Ended() {
		t.Fatalf("the runner's end ended the member's session: %+v", got)
	}
	if calls := f.routerCalls("shared"); len(calls) != 0 {
		t.Fatalf("router calls = %+v", calls)
	}
	// Nor is it the task's: the read does not serve it, and waits for nothing.
	r.complete(c, "done", "")
	f.waitCaughtUp()
	if page := f.readRemote(alice, sess.ID, "0", 1000); len(page.RecordedSessions) != 0 || !page.Ended {
		t.Fatalf("read = %+v", page)
	}
}
