package node_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/spinehq/spine/internal/config"
	"github.com/spinehq/spine/internal/pgboot"
	"github.com/spinehq/spine/internal/pgtest"
	"github.com/spinehq/spine/internal/spinetest"
	"github.com/spinehq/spine/node"
	"github.com/spinehq/spine/streams"
)

type ingestResult struct {
	Index, Status int
	ID            string
	Duplicate     bool
	Error         *struct{ Code, Message string }
}

type ingestResp struct {
	Accepted, Refused int
	Results           []ingestResult
}

// ingest posts envs as the token's caller, filling each start's owner
// from the token.
func (f *fixture) ingest(tok string, envs ...*streams.Envelope) ingestResp {
	f.t.Helper()
	for _, e := range envs {
		if e.Type == streams.TypeSessionStart {
			e.Owner = nil
		}
	}
	code, body := f.do("POST", "/v1/ingest", tok, envelopes(f.t, envs...))
	if code != http.StatusMultiStatus {
		f.t.Fatalf("ingest = %d %s", code, body)
	}
	return decode[ingestResp](f.t, body)
}

// An envelope id another tenant used first (here: the very id o1's
// producer sends next) neither swallows o1's envelope nor tells the other
// tenant anything: deduplication is per caller.
func TestAnotherTenantsIDCannotSwallowYours(t *testing.T) {
	f := newFixture(t)
	o1, o2 := f.token("o1", "m1"), f.token("o2", "m1")
	// o2 pre-posts, in a session of its own, the ids o1 will use next.
	squat := spinetest.Start("o2-own")
	squat.ID = "s1-start"
	chunk := spinetest.Text("o2-own", 1, "noise")
	chunk.ID = "s1-c1"
	if r := f.ingest(o2, squat, chunk); r.Accepted != 2 {
		t.Fatalf("o2's own session = %+v", r)
	}
	r := f.ingest(o1, spinetest.Start("s1"), spinetest.Text("s1", 1, "hello"), spinetest.End("s1", "done", "", ""))
	for _, res := range r.Results {
		if res.Status != http.StatusAccepted || res.Duplicate {
			t.Fatalf("o1's envelope %s = %+v: another tenant's id made it a duplicate", res.ID, res)
		}
	}
	// No oracle: o2 re-posting an id o1 has used is new to o2; only o2's
	// own retry is a duplicate.
	probe := spinetest.Text("o2-own", 2, "probe")
	probe.ID = "s1-end"
	if r := f.ingest(o2, probe); r.Results[0].Duplicate {
		t.Fatalf("o2 learned that o1 used id s1-end: %+v", r.Results[0])
	}
	if r := f.ingest(o2, chunk); !r.Results[0].Duplicate {
		t.Fatalf("o2's own retry = %+v, want a duplicate", r.Results[0])
	}
	f.waitCaughtUp()
	code, body := f.do("GET", "/v1/sessions/s1", o1, nil)
	if code != 200 || !bytes.Contains(body, []byte(`"status":"done"`)) || !bytes.Contains(body, []byte(`"lastSeq":1`)) {
		t.Fatalf("o1's session = %d %s", code, body)
	}
	if _, body := f.do("GET", "/v1/deadletters", o1, nil); !bytes.Contains(body, []byte(`"deadLetters":[]`)) {
		t.Fatalf("o1's dead letters = %s", body)
	}
}

// A session id another owner started first is refused at the door with 409
// session_exists, and o1's chunks and end for it with the 404 of a session
// that was never started: no 202 for envelopes that would vanish.
func TestSessionIDHeldByAnotherOwnerIsRefusedAtTheDoor(t *testing.T) {
	f := newFixture(t)
	o1, o2, o1m2 := f.token("o1", "m1"), f.token("o2", "m1"), f.token("o1", "m2")
	first := spinetest.Start("S")
	first.ID = "o2-start" // not o1's envelope id: only the session id collides
	if r := f.ingest(o2, first); r.Accepted != 1 {
		t.Fatalf("o2's start = %+v", r)
	}
	for _, tok := range []string{o1, o1m2} { // another org, and another member of one's own org
		r := f.ingest(tok, spinetest.Start("S"), spinetest.Text("S", 1, "mine"), spinetest.End("S", "done", "", ""))
		if r.Accepted != 0 || r.Results[0].Status != http.StatusConflict || r.Results[0].Error.Code != "session_exists" {
			t.Fatalf("start of a held id = %+v", r.Results[0])
		}
		for _, res := range r.Results[1:] {
			if res.Status != http.StatusNotFound || res.Error.Code != streams.ReasonUnknownSession {
				t.Fatalf("%s for a held id = %+v", res.ID, res)
			}
		}
	}
	// A chunk for another owner's session and one for a session nobody
	// started get the same answer, word for word.
	code, held := f.do("POST", "/v1/ingest", o1, envelopes(t, spinetest.Text("S", 2, "x")))
	_, never := f.do("POST", "/v1/ingest", o1, envelopes(t, spinetest.Text("nobody", 2, "x")))
	held = bytes.ReplaceAll(bytes.ReplaceAll(held, []byte("S-c2"), []byte("nobody-c2")), []byte(" S "), []byte(" nobody "))
	if code != http.StatusMultiStatus || !bytes.Equal(held, never) {
		t.Fatalf("held %s\nnever started %s", held, never)
	}
	// o2's session is untouched; o1 starts its own under a new id.
	if r := f.ingest(o1, spinetest.Start("S2"), spinetest.Text("S2", 1, "mine")); r.Accepted != 2 {
		t.Fatalf("o1's new id = %+v", r)
	}
	f.waitCaughtUp()
	code, body := f.do("GET", "/v1/sessions/S", o2, nil)
	if code != 200 || !bytes.Contains(body, []byte(`"status":"running"`)) || !bytes.Contains(body, []byte(`"lastSeq":0`)) {
		t.Fatalf("o2's session = %d %s", code, body)
	}
}

// A session a trusted producer started over NATS is held too: the recorder
// claims its id when it projects the start.
func TestTrustedSessionIsHeldOnceRecorded(t *testing.T) {
	f := newFixture(t)
	if _, err := f.n.Publisher.Publish(t.Context(), spinetest.Start("T"), nil); err != nil {
		t.Fatal(err)
	}
	f.waitCaughtUp()
	squat := spinetest.Start("T")
	squat.ID = "T-squat"
	r := f.ingest(f.token("o2", "m1"), squat, spinetest.Text("T", 1, "x"))
	if r.Results[0].Status != http.StatusConflict || r.Results[1].Status != http.StatusNotFound {
		t.Fatalf("squat on a recorded session = %+v", r.Results)
	}
	if r := f.ingest(f.token("acme", "alice"), spinetest.Text("T", 1, "mine")); r.Accepted != 1 {
		t.Fatalf("the owner's chunk = %+v", r.Results)
	}
}

// Two owners racing to start one id: exactly one is answered 202, the other
// 409, and the session is the winner's.
func TestRacingStartsHaveOneWinner(t *testing.T) {
	f := newFixture(t)
	toks := []string{f.token("o1", "m1"), f.token("o2", "m1")}
	for i := range 20 {
		id := fmt.Sprintf("race-%d", i)
		statuses := make([]int, len(toks))
		var wg sync.WaitGroup
		for k, tok := range toks {
			wg.Go(func() { statuses[k] = f.ingest(tok, spinetest.Start(id)).Results[0].Status })
		}
		wg.Wait()
		if !(statuses[0] == 202 && statuses[1] == 409 || statuses[0] == 409 && statuses[1] == 202) {
			t.Fatalf("%s: statuses %v, want one 202 and one 409", id, statuses)
		}
	}
	f.waitCaughtUp()
	var n int
	if err := f.n.Pool.QueryRow(t.Context(), `SELECT count(*) FROM dead_letters`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("%d dead letters (%v): a loser's start reached the log", n, err)
	}
}

// Each caller reads its own dead letters; an org admin reads the org's;
// another member's or org's never show, and reading one is the 404 of one
// that does not exist.
func TestDeadLettersAreReadByTheirOwner(t *testing.T) {
	f := newFixture(t)
	m1, m2, other := f.token("o1", "m1"), f.token("o1", "m2"), f.token("o2", "m1")
	admin := f.adminToken("o1", "boss")
	again := func(e *streams.Envelope) *streams.Envelope { e.ID += "-again"; return e }
	f.ingest(m1, spinetest.Start("a"), spinetest.End("a", "done", "", ""), again(spinetest.End("a", "failed", "", "")))
	f.ingest(m2, spinetest.Start("b"), spinetest.End("b", "done", "", ""), spinetest.Text("b", 1, "late"))
	f.ingest(other, spinetest.Start("c"), spinetest.End("c", "done", "", ""), again(spinetest.End("c", "done", "", "")))
	// A trusted producer's late chunk is its session owner's.
	f.waitCaughtUp()
	if _, err := f.n.Publisher.Publish(t.Context(), spinetest.Text("a", 9, "late from NATS"), nil); err != nil {
		t.Fatal(err)
	}
	f.waitCaughtUp()

	list := func(tok, query string) DeadLetterPage {
		t.Helper()
		code, body := f.do("GET", "/v1/deadletters"+query, tok, nil)
		if code != 200 {
			t.Fatalf("GET /v1/deadletters%s = %d %s", query, code, body)
		}
		return decode[DeadLetterPage](t, body)
	}
	mine := list(m1, "")
	if len(mine.DeadLetters) != 2 || mine.More {
		t.Fatalf("m1's dead letters = %+v", mine)
	}
	for _, d := range mine.DeadLetters {
		if d.Org != "o1" || d.Member != "m1" || d.SessionID != "a" || d.Reason != streams.ReasonSessionEnded || d.ID == "" || d.Type == "" {
			t.Errorf("m1 sees %+v", d)
		}
	}
	if got := list(m2, ""); len(got.DeadLetters) != 1 || got.DeadLetters[0].Member != "m2" || got.DeadLetters[0].Type != streams.TypeSessionChunk {
		t.Fatalf("m2's dead letters = %+v", got)
	}
	if got := list(admin, ""); len(got.DeadLetters) != 3 {
		t.Fatalf("o1 admin's dead letters = %+v", got)
	}
	if got := list(other, ""); len(got.DeadLetters) != 1 || got.DeadLetters[0].Org != "o2" {
		t.Fatalf("o2's dead letters = %+v", got)
	}
	// Pages.
	first := list(admin, "?limit=2")
	rest := list(admin, "?limit=2&after="+first.Next)
	if len(first.DeadLetters) != 2 || !first.More || len(rest.DeadLetters) != 1 || rest.More {
		t.Fatalf("pages %+v then %+v", first, rest)
	}
	if code, _ := f.do("GET", "/v1/deadletters?after=nope", m1, nil); code != 400 {
		t.Fatalf("bad cursor = %d", code)
	}
	if code, body := f.do("GET", "/v1/deadletters?since=1", m1, nil); code != 400 || !bytes.Contains(body, []byte(`"code":"bad_request"`)) {
		t.Fatalf("since on dead letters = %d %s, want 400 bad_request: the list pages with after", code, body)
	}
	// One dead letter: the owner reads it with its message; anyone else
	// gets the bytes of one that does not exist.
	d := mine.DeadLetters[0]
	path := fmt.Sprintf("/v1/deadletters/%s/%d", d.Stream, d.Seq)
	code, body := f.do("GET", path, m1, nil)
	if code != 200 || !bytes.Contains(body, []byte(`"type":"session.end"`)) {
		t.Fatalf("m1 reads its dead letter = %d %s", code, body)
	}
	if code, _ := f.do("GET", path, admin, nil); code != 200 {
		t.Fatalf("admin reads m1's dead letter = %d", code)
	}
	_, missing := f.do("GET", fmt.Sprintf("/v1/deadletters/%s/%d", d.Stream, 999999), m2, nil)
	for _, tok := range []string{m2, other} {
		code, theirs := f.do("GET", path, tok, nil)
		if code != 404 || !bytes.Equal(theirs, missing) {
			t.Errorf("another caller reads m1's dead letter = %d %s (missing: %s)", code, theirs, missing)
		}
	}
}

// DeadLetterPage is GET /v1/deadletters as a test reads it.
type DeadLetterPage struct {
	DeadLetters []struct {
		Stream, Subject, Reason, Detail, Type, ID, SessionID, Org, Member string
		Seq                                                               uint64
	}
	Next string
	More bool
}

// A rebuilt database holds the claim of every recorded session, so a
// squat stays refused after `spine rebuild`.
func TestRebuildKeepsSessionClaims(t *testing.T) {
	_, url := pgtest.New(t)
	cfg := config.Config{DatabaseURL: url, NATSListen: "127.0.0.1:0", HTTPAddr: "127.0.0.1:0",
		DataDir: t.TempDir(), TokenSecret: secret, Replicas: 1}
	n, err := node.Start(context.Background(), cfg, spinetest.Logger(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(n.Stop)
	f := &fixture{t: t, n: n, base: "http://" + n.HTTPAddr(), cfg: cfg}
	f.ingest(f.token("o1", "m1"), spinetest.Start("k1"))
	if _, err := n.Publisher.Publish(t.Context(), spinetest.Start("k2"), nil); err != nil {
		t.Fatal(err)
	}
	f.waitCaughtUp()
	rcfg := cfg
	rcfg.NATSURL = n.NATSURL()
	res, err := node.Rebuild(t.Context(), rcfg, spinetest.Logger(t), node.RebuildOptions{Keep: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = pgboot.DropDatabase(context.Background(), url, res.Database) })
	pc, err := pgx.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	pc.Database = res.Database
	conn, err := pgx.ConnectConfig(t.Context(), pc)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var claims string
	err = conn.QueryRow(t.Context(), `SELECT string_agg(session_id || '=' || org || '/' || member, ' ' ORDER BY session_id) FROM session_owners`).Scan(&claims)
	if err != nil || claims != "k1=o1/m1 k2=acme/alice" {
		t.Fatalf("rebuilt claims %q (%v), want k1=o1/m1 k2=acme/alice", claims, err)
	}
}
