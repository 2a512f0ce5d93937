package node_test

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/spinehq/spine/internal/config"
	"github.com/spinehq/spine/internal/pgtest"
	"github.com/spinehq/spine/internal/spinetest"
	"github.com/spinehq/spine/node"
	"github.com/spinehq/spine/recorder"
	"github.com/spinehq/spine/server"
	"github.com/spinehq/spine/spine"
	"github.com/spinehq/spine/streams"
)

// startQuiet starts a node whose sweeper uses the given idle timeout and
// cancel grace, with its NATS reachable for a rebuild.
func startQuiet(t *testing.T, idle, grace time.Duration) *fixture {
	t.Helper()
	_, url := pgtest.New(t)
	cfg := config.Config{DatabaseURL: url, NATSListen: "127.0.0.1:0", HTTPAddr: "127.0.0.1:0", DataDir: t.TempDir(),
		TokenSecret: secret, Replicas: 1, IdleTimeout: idle, CancelGrace: grace}
	f := &fixture{t: t, commits: make(chan struct{}, 1), cfg: cfg}
	n, err := node.Start(context.Background(), cfg, spinetest.Logger(t), &node.Options{
		OnCommit: func(uint64, []streams.Message) {
			select {
			case f.commits <- struct{}{}:
			default:
			}
		}})
	if err != nil {
		t.Fatalf("start node: %v", err)
	}
	f.n, f.base = n, "http://"+n.HTTPAddr()
	t.Cleanup(n.Stop)
	return f
}

// waitEnded waits until the recorder has ended the session, then until
// every projector has caught up, and returns the session.
func (f *fixture) waitEnded(token, id string) *recorder.Session {
	f.t.Helper()
	deadline := time.After(spinetest.WaitTimeout)
	for {
		code, body := f.do("GET", "/v1/sessions/"+id, token, nil)
		if code == 200 {
			if s := decode[*recorder.Session](f.t, body); s.Ended() {
				f.waitCaughtUp()
				return s
			}
		}
		select {
		case <-f.commits:
		case <-deadline:
			f.t.Fatalf("session %s not ended in %s", id, spinetest.WaitTimeout)
		}
	}
}

type routerCall struct {
	Status, Billing string
	Cost            *float64
}

func (f *fixture) routerCalls(id string) []routerCall {
	f.t.Helper()
	rows, err := f.n.Pool.Query(context.Background(),
		`SELECT status, billing, total_cost::float8 FROM router_calls WHERE session_id = $1`, id)
	if err != nil {
		f.t.Fatal(err)
	}
	var out []routerCall
	for rows.Next() {
		var c routerCall
		if err := rows.Scan(&c.Status, &c.Billing, &c.Cost); err != nil {
			f.t.Fatal(err)
		}
		out = append(out, c)
	}
	return out
}

func (f *fixture) deadLetterReasons(subject string) []string {
	f.t.Helper()
	rows, err := f.n.Pool.Query(context.Background(), `SELECT reason FROM dead_letters WHERE subject = $1 ORDER BY seq`, subject)
	if err != nil {
		f.t.Fatal(err)
	}
	var out []string
	for rows.Next() {
		var r string
		if err := rows.Scan(&r); err != nil {
			f.t.Fatal(err)
		}
		out = append(out, r)
	}
	return out
}

// rebuildVerifies replays the log into a fresh database and requires the
// same checksums, and a log the rebuild added nothing to.
func (f *fixture) rebuildVerifies() {
	f.t.Helper()
	before := f.sessionsLastSeq()
	rcfg := f.cfg
	rcfg.NATSURL = f.n.NATSURL()
	res, err := node.Rebuild(context.Background(), rcfg, spinetest.Logger(f.t), node.RebuildOptions{Verify: true})
	if err != nil {
		f.t.Fatal(err)
	}
	for _, tbl := range res.Differ {
		f.t.Errorf("%s: live %s, rebuilt %s", tbl, res.Live[tbl], res.Rebuilt[tbl])
	}
	if !res.Verified {
		f.t.Fatal("rebuild differs")
	}
	if after := f.sessionsLastSeq(); after != before {
		f.t.Fatalf("the rebuild published to the log: %d -> %d", before, after)
	}
}

func (f *fixture) sessionsLastSeq() uint64 {
	f.t.Helper()
	s, err := f.n.JS.Stream(context.Background(), streams.StreamSessions)
	if err != nil {
		f.t.Fatal(err)
	}
	info, err := s.Info(context.Background())
	if err != nil {
		f.t.Fatal(err)
	}
	return info.State.LastSeq
}

// A session whose producer went away without a word ends timeout /
// idle_timeout once spine has received nothing for it for the idle
// timeout, with its transcript file and its router-call row (billing
// unknown); a chunk after that is dead-lettered session_ended, and a
// rebuild reproduces all of it.
func TestIdleTimeoutEndsTheSessionWithItsRow(t *testing.T) {
	f := startQuiet(t, time.Second, time.Hour)
	alice := f.token("acme", "alice")
	f.do("POST", "/v1/ingest", alice, envelopes(t, spinetest.Start("i1"), spinetest.Text("i1", 1, "working\n"),
		spinetest.Command("i1", 2, "make")))

	s := f.waitEnded(alice, "i1")
	if s.Status != "timeout" || s.Error != recorder.ErrorIdleTimeout || s.TranscriptFileID == "" || s.RecordedSteps != 1 {
		t.Fatalf("quiet session = %+v", s)
	}
	if calls := f.routerCalls("i1"); len(calls) != 1 || calls[0].Status != "timeout" || calls[0].Billing != "unknown" ||
		calls[0].Cost != nil {
		t.Fatalf("router calls of i1 = %+v", calls)
	}
	if code, body := f.do("GET", "/v1/sessions/i1/transcript", alice, nil); code != 200 ||
		!bytes.Contains(body, []byte(`"ended":true`)) || !bytes.Contains(body, []byte("working")) {
		t.Fatalf("transcript = %d %s", code, body)
	}

	f.do("POST", "/v1/ingest", alice, envelopes(t, spinetest.Text("i1", 3, "back again\n")))
	f.waitCaughtUp()
	if got := f.deadLetterReasons("spine.session.i1.chunk"); len(got) != 1 || got[0] != streams.ReasonSessionEnded {
		t.Fatalf("late chunk dead letters = %v, want [session_ended]", got)
	}
	f.rebuildVerifies()
}

// POST /v1/sessions/{id}/cancel publishes the cancel (an observation on the
// session's run) and answers 202; with no end from the producer within the
// grace the session ends cancelled. Another member's session (an org
// admin's included), another org's and a missing one are the same 404 as
// GET gives; an ended session is a 409.
func TestCancelEndsTheSessionAfterTheGrace(t *testing.T) {
	f := startQuiet(t, time.Hour, 500*time.Millisecond)
	alice, bob := f.token("acme", "alice"), f.token("acme", "bob")
	f.do("POST", "/v1/ingest", alice, envelopes(t, spinetest.Start("c1"), spinetest.Text("c1", 1, "on it\n"),
		spinetest.Start("c2"), spinetest.Start("c3")))
	f.waitCaughtUp()

	carol, admin := f.token("globex", "carol"), f.adminToken("acme", "boss") // owner only: an admin too
	_, getMissing := f.do("GET", "/v1/sessions/nope", bob, nil)
	for _, tok := range []string{bob, carol, admin} {
		for _, id := range []string{"c1", "nope", "bad%20id"} {
			code, body := f.do("POST", "/v1/sessions/"+id+"/cancel", tok, nil)
			if code != 404 || !bytes.Equal(body, getMissing) {
				t.Errorf("cancelling %s = %d %s, want the 404 of GET: %s", id, code, body, getMissing)
			}
		}
	}
	for _, bad := range []string{`{"reason": 5}`, `{"why": "x"}`, `[1]`, `{"reason": "a"} {}`} {
		if code, body := f.do("POST", "/v1/sessions/c1/cancel", alice, []byte(bad)); code != 400 ||
			!bytes.Contains(body, []byte(`"code":"bad_request"`)) {
			t.Errorf("body %s = %d %s", bad, code, body)
		}
	}
	if code, body := f.do("POST", "/v1/sessions/c1/cancel", alice, []byte("{\"reason\": \"\xff\"}")); code != 400 ||
		!bytes.Contains(body, []byte(`"code":"invalid_utf8"`)) {
		t.Errorf("a reason that is not UTF-8 = %d %s, want 400 invalid_utf8", code, body)
	}

	code, body := f.do("POST", "/v1/sessions/c1/cancel", alice, []byte(`{"reason": "wrong branch"}`))
	res := decode[server.CancelResult](t, body)
	if code != 202 || res.SessionID != "c1" || res.Control != "cancel" || res.Seq == 0 || res.Duplicate ||
		res.Reason != "wrong branch" || res.GraceSeconds != 0.5 {
		t.Fatalf("cancel = %d %s", code, body)
	}
	s := f.waitEnded(alice, "c1")
	if s.Status != "cancelled" || s.Error != recorder.ErrorCancelGrace || s.TranscriptFileID == "" {
		t.Fatalf("cancelled session = %+v", s)
	}
	_, body = f.do("GET", "/v1/runs/run-c1/steps", alice, nil)
	notes := decode[spine.StepsPage](t, body).Notes
	if len(notes) != 1 || notes[0].Kind != spine.ObsControl || !bytes.Contains(notes[0].Body, []byte(`"reason":"wrong branch"`)) {
		t.Fatalf("control observation = %s", body)
	}
	if calls := f.routerCalls("c1"); len(calls) != 1 || calls[0].Status != "cancelled" || calls[0].Billing != "unknown" {
		t.Fatalf("router calls of c1 = %+v", calls)
	}
	if code, body := f.do("POST", "/v1/sessions/c1/cancel", alice, nil); code != 409 ||
		!bytes.Contains(body, []byte(`"code":"session_ended"`)) {
		t.Fatalf("cancel an ended session = %d %s", code, body)
	}
	if _, body := f.do("GET", "/v1/sessions/c2", alice, nil); decode[*recorder.Session](t, body).Ended() {
		t.Fatalf("a session nobody cancelled ended: %s", body)
	}
	// The answer echoes the reason as the log keeps it.
	code, body = f.do("POST", "/v1/sessions/c3/cancel", alice, []byte(`{"reason": "key sk-ant-api03-Zk9xV2hQ3mR7tY1uW4pL8nB6cD0eF5gH"}`))
	if code != 202 || bytes.Contains(body, []byte("Zk9xV2hQ3mR7")) || !bytes.Contains(body, []byte(`"reason":"key `)) {
		t.Fatalf("cancel with a key in its reason = %d %s", code, body)
	}
	f.waitEnded(alice, "c3") // before the rebuild: the live sweeper must have nothing left to publish
	f.rebuildVerifies()
}

// Two nodes, each with a sweeper, sharing the recorder by partitions: every
// quiet session ends timeout exactly once, with one end in the log and no
// dead letter, whichever node swept it.
func TestTwoNodesEndEachQuietSessionOnce(t *testing.T) {
	natsToken := strings.Repeat("5c", 32)
	emb, err := streams.StartEmbedded(streams.EmbeddedConfig{StoreDir: t.TempDir(), Listen: "127.0.0.1:0", Token: natsToken})
	if err != nil {
		t.Fatal(err)
	}
	defer emb.Stop()
	_, dbURL := pgtest.New(t)
	cfg := func() config.Config {
		return config.Config{DatabaseURL: dbURL, NATSURL: emb.ClientURL(), NATSToken: natsToken, HTTPAddr: "127.0.0.1:0",
			DataDir: t.TempDir(), TokenSecret: secret, Replicas: 1, Partitions: 2, IdleTimeout: 2 * time.Second}
	}
	var nodes []*node.Node
	for range 2 {
		n, err := node.Start(context.Background(), cfg(), spinetest.Logger(t), nil)
		if err != nil {
			t.Fatal(err)
		}
		defer n.Stop()
		nodes = append(nodes, n)
	}
	a, b := nodes[0], nodes[1]
	waitFor(t, "one partition each", func() bool { return len(a.LeadingPartitions()) == 1 && len(b.LeadingPartitions()) == 1 })
	const sessions = 8
	for s := range sessions {
		id := fmt.Sprintf("two-%d", s)
		for _, e := range []*streams.Envelope{spinetest.Start(id), spinetest.Text(id, 1, "hi\n")} {
			if _, err := a.Publisher.Publish(context.Background(), e, nil); err != nil {
				t.Fatal(err)
			}
		}
	}
	waitFor(t, "every session to time out", func() bool {
		var n int
		a.Pool.QueryRow(context.Background(), `SELECT count(*) FROM sessions WHERE status = 'timeout'`).Scan(&n)
		return n == sessions
	})
	st, err := a.JS.Stream(context.Background(), streams.StreamSessions)
	if err != nil {
		t.Fatal(err)
	}
	info, err := st.Info(context.Background(), jetstream.WithSubjectFilter("spine.session.*.end"))
	if err != nil {
		t.Fatal(err)
	}
	var ends uint64
	for _, c := range info.State.Subjects {
		ends += c
	}
	var dead int
	a.Pool.QueryRow(context.Background(), `SELECT count(*) FROM dead_letters`).Scan(&dead)
	if ends != sessions || len(info.State.Subjects) != sessions || dead != 0 {
		t.Fatalf("%d ends on %d subjects for %d sessions, %d dead letters", ends, len(info.State.Subjects), sessions, dead)
	}
	republishSweptEnds(t, a, st, sessions)
}

// republishSweptEnds stores every session's end again, as a node that
// swept it after the duplicate window would, then a late chunk behind it:
// the recorder must drop the ends silently (the sessions keep their end)
// and dead-letter only the chunks.
func republishSweptEnds(t *testing.T, a *node.Node, st jetstream.Stream, sessions int) {
	t.Helper()
	for s := range sessions {
		id := fmt.Sprintf("two-%d", s)
		m, err := st.GetLastMsgForSubject(context.Background(), "spine.session."+id+".end")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := a.JS.Publish(context.Background(), m.Subject, m.Data); err != nil {
			t.Fatal(err)
		}
		if _, err := a.Publisher.Publish(context.Background(), spinetest.Text(id, 2, "late\n"), nil); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "the late chunks' dead letters", func() bool {
		var n int
		a.Pool.QueryRow(context.Background(), `SELECT count(*) FROM dead_letters WHERE subject LIKE '%.chunk'`).Scan(&n)
		return n == sessions
	})
	var dead, timedOut int
	a.Pool.QueryRow(context.Background(), `SELECT count(*) FROM dead_letters`).Scan(&dead)
	a.Pool.QueryRow(context.Background(), `SELECT count(*) FROM sessions WHERE status = 'timeout'`).Scan(&timedOut)
	if dead != sessions || timedOut != sessions {
		t.Fatalf("%d dead letters for %d late chunks, %d of %d sessions still timeout: a swept end stored again was dead-lettered",
			dead, sessions, timedOut, sessions)
	}
}
