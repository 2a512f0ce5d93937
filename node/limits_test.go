package node_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/spinehq/spine/desktop"
	"github.com/spinehq/spine/internal/config"
	"github.com/spinehq/spine/internal/pgtest"
	"github.com/spinehq/spine/internal/spinetest"
	"github.com/spinehq/spine/node"
	"github.com/spinehq/spine/streams"
)

// startLimited starts a node whose limits set changes.
func startLimited(t *testing.T, set func(*config.Config)) *fixture {
	t.Helper()
	_, url := pgtest.New(t)
	cfg := config.Config{DatabaseURL: url, NATSListen: "off", HTTPAddr: "127.0.0.1:0", DataDir: t.TempDir(),
		TokenSecret: secret, Replicas: 1}
	set(&cfg)
	n, err := node.Start(context.Background(), cfg, spinetest.Logger(t), nil)
	if err != nil {
		t.Fatalf("start node: %v", err)
	}
	t.Cleanup(n.Stop)
	return &fixture{t: t, n: n, base: "http://" + n.HTTPAddr(), cfg: cfg}
}

// trickle opens a raw connection and posts a body to path that announces
// size bytes but arrives a few bytes at a time; it returns the connection.
func (f *fixture) trickle(path, token string, size int) net.Conn {
	f.t.Helper()
	conn, err := net.Dial("tcp", f.n.HTTPAddr())
	if err != nil {
		f.t.Fatal(err)
	}
	f.t.Cleanup(func() { conn.Close() })
	fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: spine\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n[",
		path, token, size)
	go func() { // 10 bytes every 20 ms (500 B/s) until the server hangs up
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for range tick.C {
			if _, err := conn.Write(bytes.Repeat([]byte(" "), 10)); err != nil {
				return
			}
		}
	}()
	return conn
}

// readCut reads the answer on a trickling connection, then the end of the
// connection: the server must have closed it.
func readCut(t *testing.T, conn net.Conn) (*http.Response, []byte) {
	t.Helper()
	_ = conn.SetReadDeadline(time.Now().Add(spinetest.WaitTimeout))
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("no answer on the trickling connection: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	// A close with trickled bytes still unread is a reset.
	if _, err := br.ReadByte(); err != io.EOF && !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("the trickling connection is still open after its answer (read: %v)", err)
	}
	return resp, body
}

// A body trickling far below the minimum rate is cut with 408
// body_too_slow and its connection closed; while it trickled it held its
// share of the in-flight budget (another request was refused 429 busy with
// Retry-After), and once cut it holds none (that request then succeeds).
func TestTricklingBodyIsCutAndHoldsNoBudget(t *testing.T) {
	f := startLimited(t, func(c *config.Config) {
		c.BodyGrace, c.BodyMinRate = 300*time.Millisecond, 16<<10
		c.InflightBytes = 1 << 20 // the trickler's 150 KB weigh 750 KB of it
	})
	alice := f.token("acme", "alice")
	conn := f.trickle("/v1/ingest", alice, 150_000)
	waitFor(t, "the trickler to hold budget", func() bool { return f.inflight() > 0 })

	batch := envelopes(t, spinetest.Start("s1"), spinetest.Text("s1", 1, strings.Repeat("x", 100_000)))
	resp := f.post("/v1/ingest", alice, batch)
	if resp.StatusCode != 429 || resp.Header.Get("Retry-After") == "" || !bytes.Contains(resp.body, []byte(`"code":"busy"`)) {
		t.Fatalf("while the trickler holds the budget: %d Retry-After=%q %s", resp.StatusCode, resp.Header.Get("Retry-After"), resp.body)
	}

	cut, body := readCut(t, conn)
	if cut.StatusCode != http.StatusRequestTimeout || !bytes.Contains(body, []byte(`"code":"body_too_slow"`)) {
		t.Fatalf("trickling body = %d %s, want 408 body_too_slow", cut.StatusCode, body)
	}
	if got := f.inflight(); got != 0 {
		t.Fatalf("after the cut %v bytes are still held", got)
	}
	if resp := f.post("/v1/ingest", alice, batch); resp.StatusCode != 207 || !bytes.Contains(resp.body, []byte(`"accepted":2`)) {
		t.Fatalf("after the cut: %d %s", resp.StatusCode, resp.body)
	}
}

// Twenty tricklers at once are all cut, whatever route they use.
func TestEveryTricklerIsCut(t *testing.T) {
	f := startLimited(t, func(c *config.Config) { c.BodyGrace = 200 * time.Millisecond })
	alice := f.token("acme", "alice")
	var conns []net.Conn
	for i := range 20 {
		path := []string{"/v1/ingest", "/v1/remote-sessions", "/v1/library/uploads?name=f.txt"}[i%3]
		conns = append(conns, f.trickle(path, alice, 1_000_000))
	}
	for i, c := range conns {
		if resp, body := readCut(t, c); resp.StatusCode != http.StatusRequestTimeout {
			t.Fatalf("trickler %d = %d %s", i, resp.StatusCode, body)
		}
	}
}

// An org over its ingest quota gets 429 quota_exceeded with Retry-After;
// another org's envelopes are accepted meanwhile.
func TestOrgOverQuotaDoesNotHoldAnotherOrgBack(t *testing.T) {
	f := startLimited(t, func(c *config.Config) { c.OrgEnvelopesPerSec = 1 })
	a, b := f.token("o1", "m1"), f.token("o2", "m1")
	burst := []*streams.Envelope{spinetest.Start("a1")}
	for i := range 100 {
		burst = append(burst, spinetest.Text("a1", int64(i+1), "burst"))
	}
	if resp := f.post("/v1/ingest", a, ownerless(t, burst...)); resp.StatusCode != 207 {
		t.Fatalf("o1's first batch: %d %s", resp.StatusCode, resp.body)
	}
	over := f.post("/v1/ingest", a, ownerless(t, spinetest.Text("a1", 101, "more")))
	if over.StatusCode != 429 || over.Header.Get("Retry-After") == "" || !bytes.Contains(over.body, []byte(`"code":"quota_exceeded"`)) {
		t.Fatalf("o1 over quota: %d Retry-After=%q %s", over.StatusCode, over.Header.Get("Retry-After"), over.body)
	}
	small := ownerless(t, spinetest.Start("b1"), spinetest.Text("b1", 1, "hi"), spinetest.End("b1", "done", "m", ""))
	if resp := f.post("/v1/ingest", b, small); resp.StatusCode != 207 || !bytes.Contains(resp.body, []byte(`"accepted":3`)) {
		t.Fatalf("o2 while o1 is over quota: %d %s", resp.StatusCode, resp.body)
	}
}

// Event streams have no body and keep no deadline: a runner's stream
// opened before a body was cut for slowness still delivers work after.
func TestEventStreamOutlivesTheBodyDeadline(t *testing.T) {
	f := startLimited(t, func(c *config.Config) { c.BodyGrace = 200 * time.Millisecond })
	alice := f.token("acme", "alice")
	code, body := f.do("POST", "/v1/desktop-runner/tokens", alice, []byte(`{"runnerId":"r1"}`))
	if code != 201 {
		t.Fatalf("mint runner token: %d %s", code, body)
	}
	runner := decode[desktop.RunnerToken](t, body).Token
	inv := `{"machine":"m1","apps":["claude-code"],"capabilities":["remote_session"],"protocolVersion":1,"executionTargets":["desktop"]}`
	if code, body := f.do("POST", "/v1/desktop-runner/register", runner, []byte(inv)); code != 200 {
		t.Fatalf("register: %d %s", code, body)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	_, events := f.openEvents(ctx, "/v1/desktop-runner/events", runner)
	nextEvent(t, events, "ready")

	if cut, _ := readCut(t, f.trickle("/v1/ingest", alice, 1000)); cut.StatusCode != http.StatusRequestTimeout {
		t.Fatalf("trickler = %d", cut.StatusCode)
	}
	if code, body := f.do("POST", "/v1/remote-sessions", alice, []byte(`{"target":"desktop","instructions":"x"}`)); code != 201 {
		t.Fatalf("create: %d %s", code, body)
	}
	nextEvent(t, events, "work_available")
}

// openEvents opens the event stream at path as tok's caller, failing the
// test unless it answers 200; the stream closes with the test or ctx.
func (f *fixture) openEvents(ctx context.Context, path, tok string) (*http.Response, *bufio.Scanner) {
	f.t.Helper()
	req, _ := http.NewRequestWithContext(ctx, "GET", f.base+path, nil)
	req.Header.Set("Authorization", "Bearer "+tok)
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != http.StatusOK {
		f.t.Fatalf("events %s: %v %v", path, resp, err)
	}
	f.t.Cleanup(func() { resp.Body.Close() })
	return resp, bufio.NewScanner(resp.Body)
}

func nextEvent(t *testing.T, sc *bufio.Scanner, name string) {
	t.Helper()
	for sc.Scan() {
		if sc.Text() == "event: "+name {
			return
		}
	}
	t.Fatalf("stream ended before event %s: %v", name, sc.Err())
}

type answer struct {
	*http.Response
	body []byte
}

func (f *fixture) post(path, token string, body []byte) answer {
	f.t.Helper()
	req, _ := http.NewRequest("POST", f.base+path, bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	// An answer given before the body is read (429 busy, quota_exceeded)
	// comes with the connection closed; a client still writing the body
	// would see a reset instead of the answer, so the body waits for the
	// server's 100 Continue, as careful clients of large bodies do.
	req.Header.Set("Expect", "100-continue")
	resp, err := expectClient.Do(req)
	if err != nil {
		f.t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return answer{resp, data}
}

// expectClient sends a body only once the server asks for it (see post).
var expectClient = &http.Client{Transport: &http.Transport{ExpectContinueTimeout: time.Minute}}

// inflight reads spine_http_inflight_bytes from the node's registry.
func (f *fixture) inflight() float64 {
	f.t.Helper()
	mfs, err := f.n.Registry.Gather()
	if err != nil {
		f.t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == "spine_http_inflight_bytes" {
			return mf.GetMetric()[0].GetGauge().GetValue()
		}
	}
	return 0
}

// ownerless encodes envelopes without owners: spine fills in the caller.
func ownerless(t *testing.T, envs ...*streams.Envelope) []byte {
	t.Helper()
	for _, e := range envs {
		e.Owner = nil
	}
	return envelopes(t, envs...)
}

// A body without a Content-Length takes its budget as it arrives: past
// the budget it is cut mid-body with 429 busy and Retry-After.
func TestChunkedBodyPastTheBudgetIsCut(t *testing.T) {
	f := startLimited(t, func(c *config.Config) {
		c.BodyGrace, c.InflightBytes = time.Minute, 1<<20
	})
	alice := f.token("acme", "alice")
	f.trickle("/v1/ingest", alice, 150_000) // holds 750 KB of the 1 MiB
	waitFor(t, "the trickler to hold budget", func() bool { return f.inflight() > 0 })

	conn, err := net.Dial("tcp", f.n.HTTPAddr())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "POST /v1/ingest HTTP/1.1\r\nHost: spine\r\nAuthorization: Bearer %s\r\nTransfer-Encoding: chunked\r\n\r\n", alice)
	go func() { // 64 KiB chunks until the server hangs up
		chunk := fmt.Sprintf("%x\r\n%s\r\n", 64<<10, strings.Repeat(" ", 64<<10))
		for {
			if _, err := io.WriteString(conn, chunk); err != nil {
				return
			}
		}
	}()
	resp, body := readCut(t, conn)
	if resp.StatusCode != 429 || resp.Header.Get("Retry-After") == "" || !bytes.Contains(body, []byte(`"code":"busy"`)) {
		t.Fatalf("chunked body past the budget = %d Retry-After=%q %s", resp.StatusCode, resp.Header.Get("Retry-After"), body)
	}
}

// A request still sending its body is charged for what it has sent: while
// org o1's chunked body, already past o1's burst, is being read, o1's next
// request is refused 429 quota_exceeded and o2's is accepted.
func TestConcurrentRequestsPastTheQuotaAreRefused(t *testing.T) {
	f := startLimited(t, func(c *config.Config) { c.BodyGrace, c.OrgBytesPerSec = time.Minute, 64<<10 })
	a, b := f.token("o1", "m1"), f.token("o2", "m1")
	conn, err := net.Dial("tcp", f.n.HTTPAddr())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "POST /v1/ingest HTTP/1.1\r\nHost: spine\r\nAuthorization: Bearer %s\r\nTransfer-Encoding: chunked\r\n\r\n1\r\n[\r\n", a)
	for range 5 { // 300 KB, past the 256 KiB burst; the body is left open
		fmt.Fprintf(conn, "%x\r\n%s\r\n", 60_000, strings.Repeat(" ", 60_000))
	}
	// Bytes read are budget held: once it covers them all, all were charged.
	waitFor(t, "o1's open body to be read", func() bool { return f.inflight() >= 300_001*5 })

	over := f.post("/v1/ingest", a, ownerless(t, spinetest.Start("a1")))
	if over.StatusCode != 429 || !bytes.Contains(over.body, []byte(`"code":"quota_exceeded"`)) {
		t.Fatalf("o1 while its open body is past its quota: %d %s", over.StatusCode, over.body)
	}
	small := ownerless(t, spinetest.Start("b1"), spinetest.End("b1", "done", "m", ""))
	if resp := f.post("/v1/ingest", b, small); resp.StatusCode != 207 || !bytes.Contains(resp.body, []byte(`"accepted":2`)) {
		t.Fatalf("o2 meanwhile: %d %s", resp.StatusCode, resp.body)
	}
}

// No org holds more than half of the in-flight budget: o1's second large
// body is refused 429 busy at once, and o2 still gets in.
func TestOneOrgCannotTakeTheWholeBudget(t *testing.T) {
	f := startLimited(t, func(c *config.Config) { c.BodyGrace, c.InflightBytes = time.Minute, 1<<20 })
	a, b := f.token("o1", "m1"), f.token("o2", "m1")
	f.trickle("/v1/ingest", a, 100_000) // weighs 500 KB of o1's 512 KiB
	waitFor(t, "o1's first body to hold budget", func() bool { return f.inflight() > 0 })

	resp, body := readCut(t, f.trickle("/v1/ingest", a, 100_000))
	if resp.StatusCode != 429 || !bytes.Contains(body, []byte(`"code":"busy"`)) {
		t.Fatalf("o1's second body = %d %s, want 429 busy", resp.StatusCode, body)
	}
	batch := ownerless(t, spinetest.Start("b1"), spinetest.Text("b1", 1, strings.Repeat("x", 90_000)))
	if got := f.post("/v1/ingest", b, batch); got.StatusCode != 207 || !bytes.Contains(got.body, []byte(`"accepted":2`)) {
		t.Fatalf("o2 while o1 holds its half: %d %s", got.StatusCode, got.body)
	}
}
