package desktop_test

import (
	"context"
	"testing"
	"time"

	"github.com/spinehq/spine/desktop"
)

// recordLate writes a recorded session of taskID with one stdout chunk
// straight into the recorder's tables, as the recorder would once it
// projects a start the runner sent while it held the task.
func (e *env) recordLate(id, taskID, text string) {
	e.t.Helper()
	ctx := context.Background()
	now := time.Now()
	if _, err := e.h.Pool.Exec(ctx, `INSERT INTO sessions (id, org, member, app, kind, task_id, worker_id, status,
		session_run_id, last_seq, started_at, ended_at, updated_at) VALUES ($1, 'acme', 'alice', 'claude-code', 'run', $2,
		'laptop', 'done', 'run-'||$1, 1, $3, $3, $3)`, id, taskID, now); err != nil {
		e.t.Fatal(err)
	}
	if _, err := e.h.Pool.Exec(ctx, `INSERT INTO session_chunks (session_id, seq, stream, text, at) VALUES ($1, 1, 'stdout', $2, $3)`,
		id, text, now); err != nil {
		e.t.Fatal(err)
	}
}

// A task that ran and ended before its recorded session reached the
// recorder's tables: a read in between does not give the session up, and
// the next read returns it; a minute after the task's end without one, the
// cursor stops waiting.
func TestReadWaitsForALateRecordedSession(t *testing.T) {
	e := newEnv(t)
	alice := e.member("acme", "alice")
	r := e.runner(alice, "laptop", "laptop")
	sess := e.create(alice, map[string]any{"target": "desktop", "instructions": "x"})
	c := r.claim(sess.LatestTaskID)
	e.must(200, "POST", "/v1/desktop-runner/tasks/"+c.Task.ID+"/complete", r.token, map[string]any{"fence": c.Fence})
	first := e.read(alice, sess.ID, "0")
	if len(first.Entries) != 2 || !first.Ended {
		t.Fatalf("first read = %+v", first)
	}
	e.recordLate("late-1", c.Task.ID, "the answer")
	next := e.read(alice, sess.ID, first.Next)
	if len(next.Entries) != 1 || next.Entries[0].Source != desktop.SourceSession || next.Entries[0].Text != "the answer" ||
		next.Entries[0].SessionID != "late-1" || len(next.RecordedSessions) != 1 {
		t.Fatalf("read after the late session = %+v", next)
	}

	// Another task without a session: waited for, then given up.
	e.must(202, "POST", "/v1/remote-sessions/"+sess.ID+"/messages", alice, map[string]string{"prompt": "again"})
	c2 := r.claim(r.work()[0].ID)
	e.must(200, "POST", "/v1/desktop-runner/tasks/"+c2.Task.ID+"/complete", r.token, map[string]any{"fence": c2.Fence})
	waiting := e.read(alice, sess.ID, next.Next)
	if len(waiting.Entries) != 2 {
		t.Fatalf("follow-up read = %+v", waiting)
	}
	e.clock.Advance(2 * time.Minute)
	if gaveUp := e.read(alice, sess.ID, waiting.Next); len(gaveUp.Entries) != 0 || gaveUp.Next == waiting.Next {
		t.Fatalf("a minute on, the cursor must fold the task: %+v (was %s)", gaveUp, waiting.Next)
	}
}
