package node_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/spinehq/spine/auth"
	"github.com/spinehq/spine/internal/config"
	"github.com/spinehq/spine/internal/pgtest"
	"github.com/spinehq/spine/internal/spinetest"
	"github.com/spinehq/spine/node"
	"github.com/spinehq/spine/streams"
)

func TestMain(m *testing.M) { spinetest.Main(m) }

const secret = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff"

type fixture struct {
	t       *testing.T
	n       *node.Node
	base    string
	commits chan struct{}
	cfg     config.Config
}

func start(t *testing.T, dbURL, dataDir string) *fixture {
	t.Helper()
	cfg := config.Config{DatabaseURL: dbURL, NATSListen: "off", HTTPAddr: "127.0.0.1:0", DataDir: dataDir,
		TokenSecret: secret, Replicas: 1}
	f := &fixture{t: t, commits: make(chan struct{}, 1), cfg: cfg}
	n, err := node.Start(context.Background(), cfg, spinetest.Logger(t), &node.Options{BatchSize: 50,
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

func newFixture(t *testing.T) *fixture {
	_, url := pgtest.New(t)
	return start(t, url, t.TempDir())
}

func (f *fixture) token(org, member string) string {
	tok, err := f.n.Signer.Mint(auth.Claims{Org: org, Member: member}, time.Hour)
	if err != nil {
		f.t.Fatal(err)
	}
	return tok
}

// adminToken mints a token of the org's admin role.
func (f *fixture) adminToken(org, member string) string {
	tok, err := f.n.Signer.Mint(auth.Claims{Org: org, Member: member, Role: auth.RoleAdmin}, time.Hour)
	if err != nil {
		f.t.Fatal(err)
	}
	return tok
}

func (f *fixture) do(method, path, token string, body []byte) (int, []byte) {
	f.t.Helper()
	return spinetest.Do(f.t, method, f.base+path, token, bytes.NewReader(body))
}

// waitCaughtUp waits until every projector has applied everything.
func (f *fixture) waitCaughtUp() {
	f.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), spinetest.WaitTimeout)
	defer cancel()
	if err := f.n.WaitIdle(ctx, nil); err != nil {
		f.t.Fatalf("not caught up: %v", err)
	}
}

func envelopes(t *testing.T, envs ...*streams.Envelope) []byte {
	t.Helper()
	var parts []string
	for _, e := range envs {
		b, err := e.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		parts = append(parts, string(b))
	}
	return []byte("[" + strings.Join(parts, ",") + "]")
}

func decode[T any](t *testing.T, data []byte) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(data, &v); err != nil {
		t.Fatalf("decode %s: %v", data, err)
	}
	return v
}

func TestHealthReadyMetrics(t *testing.T) {
	f := newFixture(t)
	for _, p := range []string{"/healthz", "/readyz"} {
		if code, body := f.do("GET", p, "", nil); code != 200 {
			t.Fatalf("%s = %d %s", p, code, body)
		}
	}
	code, body := f.do("GET", "/metrics", "", nil)
	for _, m := range []string{"spine_projector_checkpoint", "spine_projector_lag", "go_goroutines"} {
		if code != 200 || !bytes.Contains(body, []byte(m)) {
			t.Fatalf("/metrics lacks %s", m)
		}
	}
	if code, body := f.do("GET", "/nope", "", nil); code != 404 || !bytes.Contains(body, []byte(`"code":"not_found"`)) {
		t.Fatalf("unknown route = %d %s", code, body)
	}
}

func TestReadsNeedAValidToken(t *testing.T) {
	f := newFixture(t)
	other, _ := auth.NewSigner(bytes.Repeat([]byte{7}, 32))
	forged, _ := other.Mint(auth.Claims{Org: "acme", Member: "alice"}, time.Hour)
	for name, tok := range map[string]string{"none": "", "garbage": "not-a-token", "forged": forged} {
		code, body := f.do("GET", "/v1/sessions/s1", tok, nil)
		if code != 401 || !bytes.Contains(body, []byte(`"code":"unauthorized"`)) {
			t.Errorf("%s token: %d %s", name, code, body)
		}
	}
}

func TestIngestAndReadBack(t *testing.T) {
	f := newFixture(t)
	alice := f.token("acme", "alice")
	start := spinetest.Start("s1")
	start.Owner = nil // filled from the token
	notMine := spinetest.Start("s2")
	notMine.Owner = &streams.Owner{Org: "acme", Member: "bob"}
	badApp := spinetest.Start("s3")
	badApp.App = "cursor"
	batch := envelopes(t, start, spinetest.Text("s1", 1, "hello "), spinetest.Command("s1", 2, "ls"),
		spinetest.Text("s1", 3, "world"), notMine, badApp)
	code, body := f.do("POST", "/v1/ingest", alice, batch)
	if code != http.StatusMultiStatus {
		t.Fatalf("ingest = %d %s", code, body)
	}
	resp := decode[struct {
		Accepted, Refused int
		Results           []struct {
			Index, Status int
			ID            string
			Duplicate     bool
			Error         *struct{ Code, Message string }
		}
	}](t, body)
	if resp.Accepted != 4 || resp.Refused != 2 || resp.Results[4].Status != 403 || resp.Results[5].Status != 400 ||
		resp.Results[5].Error.Code != streams.ReasonUnknownApp || resp.Results[5].ID != "s3-start" {
		t.Fatalf("ingest results = %s", body)
	}
	// A retried batch is stored once.
	_, body = f.do("POST", "/v1/ingest", alice, envelopes(t, spinetest.Text("s1", 3, "world")))
	if !bytes.Contains(body, []byte(`"duplicate":true`)) {
		t.Fatalf("retry = %s", body)
	}
	f.waitCaughtUp()

	code, body = f.do("GET", "/v1/sessions/s1", alice, nil)
	sess := decode[map[string]any](t, body)
	if code != 200 || sess["status"] != "running" || sess["org"] != "acme" || sess["recordedSteps"] != 1.0 {
		t.Fatalf("session = %d %s", code, body)
	}
	code, body = f.do("GET", "/v1/sessions/s1/transcript?since=0&limit=1", alice, nil)
	page := decode[map[string]any](t, body)
	if code != 200 || page["more"] != true || page["next"] != 1.0 || len(page["chunks"].([]any)) != 1 {
		t.Fatalf("transcript page 1 = %d %s", code, body)
	}
	_, body = f.do("GET", "/v1/sessions/s1/transcript?since=1", alice, nil)
	page = decode[map[string]any](t, body)
	if page["more"] != false || page["next"] != 3.0 || page["ended"] != false {
		t.Fatalf("transcript page 2 = %s", body)
	}
	code, body = f.do("GET", "/v1/runs/run-s1/steps", alice, nil)
	if code != 200 || !bytes.Contains(body, []byte(`"action":"command"`)) {
		t.Fatalf("steps = %d %s", code, body)
	}
	for _, q := range []string{"since=-1", "limit=0", "limit=5001", "since=x"} {
		if code, body := f.do("GET", "/v1/sessions/s1/transcript?"+q, alice, nil); code != 400 || !bytes.Contains(body, []byte("bad_request")) {
			t.Errorf("?%s = %d %s", q, code, body)
		}
	}
}

// Another member's session is a 404 byte-identical to one that does not exist.
func TestAnotherMembersSessionIsIndistinguishableFromMissing(t *testing.T) {
	f := newFixture(t)
	alice, bob := f.token("acme", "alice"), f.token("acme", "bob")
	f.do("POST", "/v1/ingest", alice, envelopes(t, spinetest.Start("s1"), spinetest.Text("s1", 1, "secret plan")))
	f.waitCaughtUp()
	for _, path := range []string{"/v1/sessions/%s", "/v1/sessions/%s/transcript", "/v1/runs/run-%s/steps"} {
		c1, theirs := f.do("GET", fmt.Sprintf(path, "s1"), bob, nil)
		c2, missing := f.do("GET", fmt.Sprintf(path, "nope"), bob, nil)
		if c1 != 404 || c2 != 404 || !bytes.Equal(theirs, missing) {
			t.Errorf("%s: other member %d %q, missing %d %q", path, c1, theirs, c2, missing)
		}
	}
	// Bob cannot write into Alice's session either.
	f.do("POST", "/v1/ingest", bob, envelopes(t, spinetest.Text("s1", 2, "injected")))
	f.waitCaughtUp()
	_, body := f.do("GET", "/v1/sessions/s1/transcript", alice, nil)
	if bytes.Contains(body, []byte("injected")) {
		t.Fatal("another member's chunk was recorded")
	}
}

func TestTranscriptPageIsBoundedToOneMiB(t *testing.T) {
	f := newFixture(t)
	alice := f.token("acme", "alice")
	big := strings.Repeat("z", 600<<10)
	f.do("POST", "/v1/ingest", alice, envelopes(t, spinetest.Start("s1"), spinetest.Text("s1", 1, big),
		spinetest.Text("s1", 2, big), spinetest.Text("s1", 3, big)))
	f.waitCaughtUp()
	since, pages := 0.0, 0
	for {
		_, body := f.do("GET", fmt.Sprintf("/v1/sessions/s1/transcript?since=%d", int(since)), alice, nil)
		if len(body) > 1<<20+4096 {
			t.Fatalf("page of %d bytes", len(body))
		}
		page := decode[map[string]any](t, body)
		pages++
		since = page["next"].(float64)
		if page["more"] != true {
			break
		}
	}
	if pages != 3 || since != 3 {
		t.Fatalf("%d pages ending at %v, want 3 pages ending at 3", pages, since)
	}
}

// Stopping a node mid-ingest drains; a node started on the same log and
// database projects the rest, and nothing acknowledged is lost or doubled.
func TestStopDrainsAndRestartResumes(t *testing.T) {
	_, url := pgtest.New(t)
	dir := t.TempDir()
	f := start(t, url, dir)
	ctx := context.Background()
	const n = 3000
	f.n.Publisher.Publish(ctx, spinetest.Start("s1"), nil)
	for seq := int64(1); seq <= n; seq++ {
		if _, err := f.n.Publisher.PublishAsync(spinetest.Text("s1", seq, "x"), nil); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case <-f.n.JS.PublishAsyncComplete():
	case <-time.After(spinetest.WaitTimeout):
		t.Fatal("publishes not acknowledged")
	}
	<-f.commits // some batches are in
	f.n.Stop()

	g := start(t, url, dir)
	g.waitCaughtUp()
	var chunks, last int
	if err := g.n.Pool.QueryRow(ctx, `SELECT count(*), max(seq) FROM session_chunks`).Scan(&chunks, &last); err != nil {
		t.Fatal(err)
	}
	if chunks != n || last != n {
		t.Fatalf("%d chunks up to %d, want %d", chunks, last, n)
	}
}

// GET /v1/sessions pages through the caller's own sessions by id, with how
// far each is recorded; another member's never appear.
func TestListSessionsPagesTheCallersOwn(t *testing.T) {
	f := newFixture(t)
	alice, bob := f.token("acme", "alice"), f.token("acme", "bob")
	f.do("POST", "/v1/ingest", alice, envelopes(t, spinetest.Start("a1"), spinetest.Text("a1", 1, "x"),
		spinetest.Text("a1", 2, "y"), spinetest.End("a1", "done", "", ""), spinetest.Start("a2"), spinetest.Start("a3")))
	b1 := spinetest.Start("b1")
	b1.Owner = &streams.Owner{Org: "acme", Member: "bob"}
	f.do("POST", "/v1/ingest", bob, envelopes(t, b1))
	f.waitCaughtUp()
	type list struct {
		Sessions []struct {
			ID      string
			LastSeq int64
			Ended   bool
		}
		Next string
		More bool
	}
	code, body := f.do("GET", "/v1/sessions?limit=2", alice, nil)
	p1 := decode[list](t, body)
	if code != 200 || len(p1.Sessions) != 2 || !p1.More || p1.Next != "a2" || p1.Sessions[0].ID != "a1" ||
		p1.Sessions[0].LastSeq != 2 || !p1.Sessions[0].Ended || p1.Sessions[1].Ended {
		t.Fatalf("page 1 = %d %s", code, body)
	}
	_, body = f.do("GET", "/v1/sessions?limit=2&after="+p1.Next, alice, nil)
	if p2 := decode[list](t, body); len(p2.Sessions) != 1 || p2.More || p2.Sessions[0].ID != "a3" {
		t.Fatalf("page 2 = %s", body)
	}
	_, body = f.do("GET", "/v1/sessions", bob, nil)
	if p := decode[list](t, body); len(p.Sessions) != 1 || p.Sessions[0].ID != "b1" {
		t.Fatalf("bob's list = %s", body)
	}
	for _, q := range []string{"limit=0", "limit=5001", "after=a%20b"} {
		if code, body := f.do("GET", "/v1/sessions?"+q, alice, nil); code != 400 || !bytes.Contains(body, []byte("bad_request")) {
			t.Errorf("?%s = %d %s", q, code, body)
		}
	}
}
