package desktop_test

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/spinehq/spine/desktop"
	"github.com/spinehq/spine/streams"
)

// recordLate writes an ended recorded session of taskID with one stdout
// chunk per text (seq 1, 2, …) straight into the recorder's tables, as the
// recorder would once it projects what the runner sent while it held the
// task.
func (e *env) recordLate(id, taskID string, texts ...string) {
	e.t.Helper()
	ctx := context.Background()
	now := time.Now()
	if _, err := e.h.Pool.Exec(ctx, `INSERT INTO sessions (id, org, member, app, kind, task_id, worker_id, status,
		session_run_id, last_seq, started_at, ended_at, updated_at) VALUES ($1, 'acme', 'alice', 'claude-code', 'run', $2,
		'laptop', 'done', 'run-'||$1, $4, $3, $3, $3)`, id, taskID, now, len(texts)); err != nil {
		e.t.Fatal(err)
	}
	for i, text := range texts {
		if _, err := e.h.Pool.Exec(ctx, `INSERT INTO session_chunks (session_id, seq, stream, text, at) VALUES ($1, $2, 'stdout', $3, $4)`,
			id, i+1, text, now); err != nil {
			e.t.Fatal(err)
		}
	}
}

func (e *env) readN(memberTok, id, since string, limit int) desktop.ReadResult {
	e.t.Helper()
	return decode[desktop.ReadResult](e.t, e.must(200, "GET", fmt.Sprintf("/v1/remote-sessions/%s?since=%s&limit=%d", id,
		url.QueryEscape(since), limit), memberTok, nil))
}

// A recorded session whose content is cut to a page says more, and the
// read is not ended until it was read through (it was more=false and
// ended=true with 2 of 5 chunks returned).
func TestReadOfACutSessionSaysMore(t *testing.T) {
	e := newEnv(t)
	alice := e.member("acme", "alice")
	r := e.runner(alice, "laptop", "laptop")
	sess := e.create(alice, map[string]any{"target": "desktop", "instructions": "x"})
	c := r.claim(sess.LatestTaskID)
	r.link(c.Task.ID, "late-5")
	e.must(200, "POST", "/v1/desktop-runner/tasks/"+c.Task.ID+"/complete", r.token, map[string]any{"fence": c.Fence})
	since := e.readN(alice, sess.ID, "0", 10).Next // the prompt and the end
	e.recordLate("late-5", c.Task.ID, "a", "b", "c", "d", "e")
	var got []string
	for range 5 {
		page := e.readN(alice, sess.ID, since, 2)
		for _, en := range page.Entries {
			got = append(got, en.Text)
		}
		since = page.Next
		if len(got) < 5 && (!page.More || page.Ended) {
			t.Fatalf("after %q: more=%v ended=%v, want more and not ended", got, page.More, page.Ended)
		}
		if len(got) == 5 {
			if page.More || !page.Ended {
				t.Fatalf("read through: more=%v ended=%v", page.More, page.Ended)
			}
			break
		}
	}
	if strings.Join(got, "") != "abcde" {
		t.Fatalf("read %q", got)
	}
}

// link links sessionID to taskID as the session ingest does when it takes
// the runner's session.start.
func (r *fakeRunner) link(taskID, sessionID string) {
	r.e.t.Helper()
	ctx := context.Background()
	id, err := r.e.svc.VerifyRunner(ctx, r.token)
	if err != nil {
		r.e.t.Fatal(err)
	}
	if err := r.e.svc.LinkSession(ctx, id, taskID, sessionID); err != nil {
		r.e.t.Fatalf("link %s to %s: %v", sessionID, taskID, err)
	}
}

// A task that ended before its linked session reached the recorder's
// tables: reads in between, however long the recorder lags (two minutes
// here; the cursor gave up after one), neither give the session up nor say
// ended, and the next read returns it. A task that ended with no link is
// over at once: nothing can be on its way.
func TestReadWaitsForALateRecordedSession(t *testing.T) {
	e := newEnv(t)
	alice := e.member("acme", "alice")
	r := e.runner(alice, "laptop", "laptop")
	sess := e.create(alice, map[string]any{"target": "desktop", "instructions": "x"})
	c := r.claim(sess.LatestTaskID)
	r.link(c.Task.ID, "late-1")
	e.must(200, "POST", "/v1/desktop-runner/tasks/"+c.Task.ID+"/complete", r.token, map[string]any{"fence": c.Fence})
	first := e.read(alice, sess.ID, "0")
	if len(first.Entries) != 2 || first.Ended {
		t.Fatalf("first read = %+v", first)
	}
	e.clock.Advance(2 * time.Minute)
	if lag := e.read(alice, sess.ID, first.Next); len(lag.Entries) != 0 || lag.Ended || lag.Next != first.Next {
		t.Fatalf("two minutes on, the cursor must still wait for the linked session: %+v", lag)
	}
	e.recordLate("late-1", c.Task.ID, "the answer")
	next := e.read(alice, sess.ID, first.Next)
	if len(next.Entries) != 1 || next.Entries[0].Source != desktop.SourceSession || next.Entries[0].Text != "the answer" ||
		next.Entries[0].SessionID != "late-1" || len(next.RecordedSessions) != 1 || !next.Ended {
		t.Fatalf("read after the late session = %+v", next)
	}

	// A follow-up that records no session: ended as soon as it is.
	e.must(202, "POST", "/v1/remote-sessions/"+sess.ID+"/messages", alice, map[string]string{"prompt": "again"})
	c2 := r.claim(r.work()[0].ID)
	e.must(200, "POST", "/v1/desktop-runner/tasks/"+c2.Task.ID+"/complete", r.token, map[string]any{"fence": c2.Fence})
	if done := e.read(alice, sess.ID, next.Next); len(done.Entries) != 2 || !done.Ended || done.More {
		t.Fatalf("follow-up read = %+v", done)
	}
}

// The runner's assistant_text of a task with a linked session is left out
// of every read, also before the recorder has projected the session: the
// answer is read once, from the session (it was read twice: the runner's
// copy first, the session's after).
func TestAnswerIsReadOnceWhenTheSessionIsLate(t *testing.T) {
	e := newEnv(t)
	alice := e.member("acme", "alice")
	r := e.runner(alice, "laptop", "laptop")
	sess := e.create(alice, map[string]any{"target": "desktop", "instructions": "x"})
	c := r.claim(sess.LatestTaskID)
	r.link(c.Task.ID, "s-ans")
	if code, body := r.post(c.Task.ID, "events", map[string]any{"fence": c.Fence,
		"events": []desktop.RunnerEvent{{Seq: 1, Type: desktop.EventAssistantText, Text: "the answer"}}}); code != 200 {
		t.Fatalf("events = %d %s", code, body)
	}
	e.must(200, "POST", "/v1/desktop-runner/tasks/"+c.Task.ID+"/complete", r.token, map[string]any{"fence": c.Fence})
	first := e.read(alice, sess.ID, "0")
	e.recordLate("s-ans", c.Task.ID, "the answer")
	second := e.read(alice, sess.ID, first.Next)
	n := 0
	for _, en := range append(first.Entries, second.Entries...) {
		if en.Text == "the answer" {
			n++
			if en.Source != desktop.SourceSession {
				t.Errorf("the answer read from %s", en.Source)
			}
		}
	}
	if n != 1 || !second.Ended {
		t.Fatalf("the answer read %d times (first %+v, second %+v)", n, first.Entries, second)
	}
}

// The recorder commits a chunk and a later event while a read is between a
// session's chunks and its events: the read is one snapshot, so the chunk
// is read next time and not skipped (it was: the event moved the cursor
// past it).
func TestChunkAndEventCommittedMidReadAreBothRead(t *testing.T) {
	e := newEnv(t)
	alice := e.member("acme", "alice")
	r := e.runner(alice, "laptop", "laptop")
	sess := e.create(alice, map[string]any{"target": "desktop", "instructions": "x"})
	c := r.claim(sess.LatestTaskID)
	r.link(c.Task.ID, "s-race")
	e.recordLate("s-race", c.Task.ID, "one")
	ctx := context.Background()
	if _, err := e.h.Pool.Exec(ctx, `UPDATE sessions SET ended_at = NULL, status = 'running' WHERE id = 's-race'`); err != nil {
		t.Fatal(err)
	}
	once := false
	desktop.BeforeEvents(t, func() {
		if once {
			return
		}
		once = true
		for _, sql := range []string{
			`INSERT INTO session_chunks (session_id, seq, stream, text, at) VALUES ('s-race', 2, 'stdout', 'two', now())`,
			`INSERT INTO steps (run_id, idx, id, action, source, session_seq, detail, at)
				VALUES ('run-s-race', 0, 'st-race-3', 'command', 'session', 3, '{"command": "make"}', now())`,
			`UPDATE sessions SET last_seq = 3 WHERE id = 's-race'`,
		} {
			if _, err := e.h.Pool.Exec(ctx, sql); err != nil {
				t.Error(err)
			}
		}
	})
	first := e.read(alice, sess.ID, "0")
	second := e.read(alice, sess.ID, first.Next)
	var got []string
	for _, en := range append(first.Entries, second.Entries...) {
		if en.Source == desktop.SourceSession {
			got = append(got, fmt.Sprintf("%d:%s%s", en.Seq, en.Kind, en.Text))
		}
	}
	if strings.Join(got, " ") != "1:stdoutone 2:stdouttwo 3:event" {
		t.Fatalf("read %q", got)
	}
}

// The page's progress is settled (its poll stops) only once the remote
// session and every linked session have ended: a link not projected yet,
// or a running session, keeps it polling.
func TestProgressSettlesWhenAllHaveEnded(t *testing.T) {
	e := newEnv(t)
	alice := e.member("acme", "alice")
	r := e.runner(alice, "laptop", "laptop")
	sess := e.create(alice, map[string]any{"target": "desktop", "instructions": "x"})
	c := r.claim(sess.LatestTaskID)
	ctx := context.Background()
	owner := streams.Owner{Org: "acme", Member: "alice"}
	progress := func() desktop.Progress {
		t.Helper()
		p, err := e.svc.RecordedProgress(ctx, owner, sess.ID)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	r.link(c.Task.ID, "s-p")
	e.must(200, "POST", "/v1/desktop-runner/tasks/"+c.Task.ID+"/complete", r.token, map[string]any{"fence": c.Fence})
	pending := progress()
	if pending.Settled {
		t.Fatalf("settled with a link not projected: %+v", pending)
	}
	e.recordLate("s-p", c.Task.ID, "x")
	if _, err := e.h.Pool.Exec(ctx, `UPDATE sessions SET ended_at = NULL, status = 'running' WHERE id = 's-p'`); err != nil {
		t.Fatal(err)
	}
	running := progress()
	if running.Settled || running.Mark == pending.Mark {
		t.Fatalf("running session: %+v (pending %+v)", running, pending)
	}
	if _, err := e.h.Pool.Exec(ctx, `UPDATE sessions SET ended_at = now(), status = 'done' WHERE id = 's-p'`); err != nil {
		t.Fatal(err)
	}
	if ended := progress(); !ended.Settled {
		t.Fatalf("all ended: %+v", ended)
	}
}
