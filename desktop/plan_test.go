package desktop_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/spinehq/spine/desktop"
	"github.com/spinehq/spine/streams"
)

// bulkSessions writes n ended sessions of alice for taskID (ids prefix
// followed by a number, padded to idLen), each with one stdout chunk
// "<id>", straight into the recorder's tables; with linkTo set, it links
// each to the task as LinkSession's projection would, one row per session
// (a fixture too large to publish link by link).
func (e *env) bulkSessions(prefix string, idLen, n int, taskID, linkTo string) {
	e.t.Helper()
	ctx := context.Background()
	id := `rpad($1 || g::text || '-', $2, 'x')`
	for i, sql := range []string{
		`INSERT INTO sessions (id, org, member, app, kind, task_id, worker_id, status, session_run_id, last_seq, started_at,
			ended_at, updated_at) SELECT ` + id + `, 'acme', 'alice', 'claude-code', 'run', $4, 'laptop', 'done',
			'run-' || ` + id + `, 1, now() + g * interval '1 ms', now(), now() FROM generate_series(1, $3) g`,
		`INSERT INTO session_chunks (session_id, seq, stream, text, at) SELECT ` + id + `, 1, 'stdout', ` + id + `, now()
			FROM generate_series(1, $3) g`,
	} {
		args := []any{prefix, idLen, n, taskID}
		if i == 1 {
			args = args[:3]
		}
		if _, err := e.h.Pool.Exec(ctx, sql, args...); err != nil {
			e.t.Fatal(err)
		}
	}
	if linkTo == "" {
		return
	}
	if _, err := e.h.Pool.Exec(ctx, `INSERT INTO desktop_task_sessions (session_id, task_id, remote_session_id, org, member,
		runner_id, at, pos) SELECT `+id+`, $4, $5, 'acme', 'alice', 'laptop', now(), g FROM generate_series(1, $3) g`,
		prefix, idLen, n, taskID, linkTo); err != nil {
		e.t.Fatal(err)
	}
}

// The read's and the live page's queries find a remote session's sessions
// through its links and each session by its key, never by walking the
// member's sessions: with 20,000 sessions of the member that name a task
// and no statistics (autovacuum is off where this runs), sessions is read
// only by its primary key (the progress query walked sessions_owner_id,
// every session of the member: task_id IN (SELECT …) could not use the
// partial index sessions_task, dropped by migration 013).
func TestReadPlansUseTheLinks(t *testing.T) {
	e := newEnv(t)
	alice := e.member("acme", "alice")
	r := e.runner(alice, "laptop", "laptop")
	sess := e.create(alice, map[string]any{"target": "desktop", "instructions": "x"})
	c := r.claim(sess.LatestTaskID)
	e.bulkSessions("other-", 20, 20000, "dt-other", "")
	e.bulkSessions("mine-", 20, 2, c.Task.ID, sess.ID)
	for name, sql := range map[string]string{"recorded sessions": desktop.RecordedSessionsSQL, "progress": desktop.ProgressSQL} {
		var plan []byte
		if err := e.h.Pool.QueryRow(context.Background(), "EXPLAIN (FORMAT JSON) "+sql, sess.ID, "acme", "alice").Scan(&plan); err != nil {
			t.Fatal(err)
		}
		var nodes []string
		walkPlan(t, plan, func(node map[string]any) {
			if node["Relation Name"] == "sessions" {
				nodes = append(nodes, fmt.Sprint(node["Node Type"], " ", node["Index Name"]))
			}
		})
		if len(nodes) == 0 || slices.ContainsFunc(nodes, func(n string) bool { return n != "Index Scan sessions_pkey" }) {
			t.Errorf("%s reads sessions by %v:\n%s", name, nodes, plan)
		}
	}
}

func walkPlan(t *testing.T, raw []byte, visit func(map[string]any)) {
	t.Helper()
	var doc []map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	var walk func(map[string]any)
	walk = func(n map[string]any) {
		visit(n)
		kids, _ := n["Plans"].([]any)
		for _, k := range kids {
			walk(k.(map[string]any))
		}
	}
	walk(doc[0]["Plan"].(map[string]any))
}

// A page never names more sessions than its cursor may carry (256, and 16
// KiB encoded): a task with 300 recorded sessions, ids short or long, reads
// through page by page with every next a valid since (it was a next the
// server then refused: 400 bad_request), each chunk once and in order.
func TestCursorStaysWithinItsBounds(t *testing.T) {
	for _, idLen := range []int{12, 120} {
		e := newEnv(t)
		alice := e.member("acme", "alice")
		r := e.runner(alice, "laptop", "laptop")
		sess := e.create(alice, map[string]any{"target": "desktop", "instructions": "x"})
		c := r.claim(sess.LatestTaskID) // running: nothing folds
		e.bulkSessions("s", idLen, 300, c.Task.ID, sess.ID)
		since, seen := "0", []string{}
		for page := 0; ; page++ {
			if page == 20 {
				t.Fatalf("ids of %d: still more after %d pages (%d read)", idLen, page, len(seen))
			}
			res := e.readN(alice, sess.ID, since, 1000)
			if len(res.Next) > 16<<10 {
				t.Fatalf("ids of %d: next is %d bytes", idLen, len(res.Next))
			}
			for _, en := range res.Entries {
				if en.Source == desktop.SourceSession {
					seen = append(seen, en.Text)
				}
			}
			since = res.Next
			if !res.More {
				break
			}
		}
		if len(seen) != 300 {
			t.Fatalf("ids of %d: read %d chunks", idLen, len(seen))
		}
		if last := e.readN(alice, sess.ID, since, 1000); len(last.Entries) != 0 || last.More {
			t.Fatalf("ids of %d: read on from the last next = %+v", idLen, last)
		}
		for i := range seen {
			if i > 0 && seen[i] == seen[i-1] {
				t.Fatalf("ids of %d: %s read twice", idLen, seen[i])
			}
		}
	}
}

// queryCounter counts the statements a pool runs that contain each of its
// keys.
type queryCounter struct {
	mu   sync.Mutex
	keys map[string]int
}

func (c *queryCounter) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k := range c.keys {
		if strings.Contains(d.SQL, k) {
			c.keys[k]++
		}
	}
	return ctx
}

func (c *queryCounter) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// A read costs about a page, however many sessions are live: with 50
// sessions of 100 chunks each under one task, a read of 10 entries reads
// the chunks of the first session only and never reads a session's row
// again (it read every session's chunks, 150 chunk statements, and each
// session's row once more).
func TestReadCostsAboutAPage(t *testing.T) {
	e := newEnv(t)
	alice := e.member("acme", "alice")
	r := e.runner(alice, "laptop", "laptop")
	sess := e.create(alice, map[string]any{"target": "desktop", "instructions": "x"})
	c := r.claim(sess.LatestTaskID)
	e.bulkSessions("s", 12, 50, c.Task.ID, sess.ID)
	ctx := context.Background()
	for _, sql := range []string{
		`INSERT INTO session_chunks (session_id, seq, stream, text, at) SELECT s.id, g, 'stdout', 'more', now()
			FROM sessions s, generate_series(2, 100) g WHERE s.task_id = $1`,
		`UPDATE sessions SET last_seq = 100, ended_at = NULL, status = 'running' WHERE task_id = $1`,
	} {
		if _, err := e.h.Pool.Exec(ctx, sql, c.Task.ID); err != nil {
			t.Fatal(err)
		}
	}
	cfg, err := pgxpool.ParseConfig(e.h.URL)
	if err != nil {
		t.Fatal(err)
	}
	count := &queryCounter{keys: map[string]int{"FROM session_chunks": 0, "FROM sessions WHERE id": 0}}
	cfg.ConnConfig.Tracer = count
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	svc, err := desktop.New(desktop.Config{Pool: pool, JS: e.h.JS, NC: e.h.NC, Signer: e.signer})
	if err != nil {
		t.Fatal(err)
	}
	res, err := svc.Read(ctx, streams.Owner{Org: "acme", Member: "alice"}, sess.ID, "0", 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Entries) != 10 || !res.More {
		t.Fatalf("read = %d entries, more %v", len(res.Entries), res.More)
	}
	if n := count.keys["FROM session_chunks"]; n > 3 {
		t.Errorf("%d statements read chunks, want one session's (at most 3)", n)
	}
	if n := count.keys["FROM sessions WHERE id"]; n != 0 {
		t.Errorf("%d statements read a session's row again", n)
	}
}
