package node_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	collogs "go.opentelemetry.io/proto/slim/otlp/collector/logs/v1"
	colmetrics "go.opentelemetry.io/proto/slim/otlp/collector/metrics/v1"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/spinehq/spine/auth"
	"github.com/spinehq/spine/streams"
	"github.com/spinehq/spine/telemetry"
)

// otlpCapture is one request the real apps posted (testdata/otlp), as its
// manifest says it arrived.
type otlpCapture struct {
	File            string `json:"file"`
	Path            string `json:"path"`
	ContentType     string `json:"contentType"`
	ContentEncoding string `json:"contentEncoding"`
	ContentLength   int64  `json:"contentLength"`
	body            []byte // as posted, gzip included
}

var otlpDir = filepath.Join("..", "testdata", "otlp")

// hookSession is the session of testdata/hooks' captures (and of the
// claude-code-json OTLP captures: one run made both).
const hookSession = "5ccbb9e7-7ba5-4d38-991d-8b2ec2277772"

// hookBody is testdata/hooks' capture of event.
func hookBody(t *testing.T, event string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "testdata", "hooks", "claude-code-"+event+".json"))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// otlpCaptures are the captures whose file starts with prefix, in the
// order the app posted them.
func otlpCaptures(t *testing.T, prefix string) []otlpCapture {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(otlpDir, "requests.json"))
	if err != nil {
		t.Fatal(err)
	}
	var all, out []otlpCapture
	if err := json.Unmarshal(b, &all); err != nil {
		t.Fatal(err)
	}
	for _, c := range all {
		if strings.HasPrefix(c.File, prefix) {
			if c.body, err = os.ReadFile(filepath.Join(otlpDir, c.File)); err != nil {
				t.Fatal(err)
			}
			out = append(out, c)
		}
	}
	if len(out) == 0 {
		t.Fatalf("no capture %s*", prefix)
	}
	return out
}

// postOTLP posts c as the app did: chunked when it sent no Content-Length.
func (f *fixture) postOTLP(c otlpCapture, token string) (*http.Response, []byte) {
	f.t.Helper()
	var body io.Reader = bytes.NewReader(c.body)
	if c.ContentLength < 0 {
		body = io.MultiReader(body) // no length: the client sends it chunked
	}
	req, err := http.NewRequest("POST", f.base+c.Path, body)
	if err != nil {
		f.t.Fatal(err)
	}
	req.Header.Set("Content-Type", c.ContentType)
	if c.ContentEncoding != "" {
		req.Header.Set("Content-Encoding", c.ContentEncoding)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		f.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, b
}

// export posts c and decodes the 200 (otlpAnswer).
func (f *fixture) export(c otlpCapture, token string) *collogs.ExportLogsPartialSuccess {
	f.t.Helper()
	resp, b := f.postOTLP(c, token)
	return otlpAnswer(f.t, c, resp, b)
}

// otlpAnswer decodes an OTLP door's 200 with the official types, in the
// request's encoding; it is the logs' partial success (nil when none).
func otlpAnswer(t *testing.T, c otlpCapture, resp *http.Response, b []byte) *collogs.ExportLogsPartialSuccess {
	t.Helper()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != c.ContentType {
		t.Fatalf("%s: %d %s %q", c.File, resp.StatusCode, resp.Header.Get("Content-Type"), b)
	}
	unmarshal := proto.Unmarshal
	if c.ContentType == "application/json" {
		unmarshal = protojson.Unmarshal
	}
	if strings.Contains(c.Path, "metrics") {
		var m colmetrics.ExportMetricsServiceResponse
		if err := unmarshal(b, &m); err != nil || m.PartialSuccess != nil {
			t.Fatalf("%s: %v %v", c.File, &m, err)
		}
		return nil
	}
	var m collogs.ExportLogsServiceResponse
	if err := unmarshal(b, &m); err != nil {
		t.Fatalf("%s: %q: %v", c.File, b, err)
	}
	return m.PartialSuccess
}

// recordable counts the events of c's logs the door records.
func recordable(t *testing.T, caps []otlpCapture) (n int, sessionID string) {
	t.Helper()
	for _, c := range caps {
		if !strings.HasSuffix(c.Path, "logs") {
			continue
		}
		body, _ := telemetry.ReadBody(bytes.NewReader(c.body), c.ContentEncoding, nil)
		f, _ := telemetry.FormatOf(c.ContentType)
		d, err := telemetry.DecodeLogs(body, f)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range telemetry.Events(d) {
			switch e.Name {
			case "claude_code.api_request", "claude_code.tool_result", "claude_code.user_prompt", "codex.tool_result", "codex.user_prompt":
			case "codex.sse_event":
				if _, ok := e.Attrs.Int("input_token_count"); !ok {
					continue
				}
			default:
				continue
			}
			n, sessionID = n+1, e.SessionID
		}
	}
	return n, sessionID
}

// onLog is how many session.telemetry of session the log holds.
func (f *fixture) onLog(session string) int {
	f.t.Helper()
	subj := "spine.session." + session + ".telemetry"
	st, err := f.n.JS.Stream(context.Background(), streams.StreamSessions)
	if err != nil {
		f.t.Fatal(err)
	}
	info, err := st.Info(context.Background(), jetstream.WithSubjectFilter(subj))
	if err != nil {
		f.t.Fatal(err)
	}
	return int(info.State.Subjects[subj])
}

// lastOnLog is the last session.telemetry of session on the log.
func (f *fixture) lastOnLog(session string) *jetstream.RawStreamMsg {
	f.t.Helper()
	st, err := f.n.JS.Stream(context.Background(), streams.StreamSessions)
	if err != nil {
		f.t.Fatal(err)
	}
	m, err := st.GetLastMsgForSubject(context.Background(), "spine.session."+session+".telemetry")
	if err != nil {
		f.t.Fatal(err)
	}
	return m
}

// holder is who session_owners says holds session ("" for no one).
func (f *fixture) holder(session string) string {
	f.t.Helper()
	var org, member string
	_ = f.n.Pool.QueryRow(context.Background(), `SELECT org, member FROM session_owners WHERE session_id = $1`, session).Scan(&org, &member)
	if org == "" {
		return ""
	}
	return org + "/" + member
}

func (f *fixture) ingestToken(org, admin string) string {
	tok, err := f.n.Signer.Mint(auth.Claims{Org: org, Member: admin, Role: auth.RoleAdmin, Audience: auth.AudienceIngest}, time.Hour)
	if err != nil {
		f.t.Fatal(err)
	}
	return tok
}

// Every capture of the real apps, posted to a node as the app posted it
// (JSON and protobuf, gzip, chunked or not), is answered with OTLP's empty
// success, and its events are on the log once, in one session the member
// holds; metrics are counted. A re-sent export adds nothing.
func TestOTLPDoorTakesTheCaptures(t *testing.T) {
	f := newFixture(t)
	alice := f.token("acme", "alice")
	for _, prefix := range []string{"claude-code-json-logs", "claude-code-json-metrics", "claude-code-protobuf",
		"claude-code-json-gzip", "codex-json-logs", "codex-json-metrics", "codex-protobuf"} {
		caps := otlpCaptures(t, prefix)
		for _, c := range caps {
			if ps := f.export(c, alice); ps != nil {
				t.Fatalf("%s: partial success %v", c.File, ps)
			}
		}
		n, session := recordable(t, caps)
		if n == 0 {
			continue // a metrics prefix
		}
		if got := f.onLog(session); got != n || f.holder(session) != "acme/alice" {
			t.Fatalf("%s: %d telemetry envelopes of %s on the log held by %q, want %d held by acme/alice", prefix, got, session,
				f.holder(session), n)
		}
		f.export(caps[0], alice)
		t.Logf("%s: %d envelopes of %s", prefix, n, session)
		if got := f.onLog(session); got != n {
			t.Fatalf("%s: the export sent again: %d envelopes, want %d", prefix, got, n)
		}
	}
	if got := f.metric("spine_telemetry_metric_points_total", `app="codex"`); got == 0 {
		t.Fatal("no codex metric points counted")
	}
	if got := f.metric("spine_telemetry_events_total", `door="otlp",result="recorded"`); got == 0 {
		t.Fatal("no recorded events counted")
	}
}

// A protobuf body gzipped, which no capture is, decodes as well.
func TestOTLPDoorTakesGzippedProtobuf(t *testing.T) {
	f := newFixture(t)
	c := otlpCaptures(t, "codex-protobuf-logs-1")[0]
	var z bytes.Buffer
	zw := gzip.NewWriter(&z)
	_, _ = zw.Write(c.body)
	_ = zw.Close()
	c.body, c.ContentEncoding, c.ContentLength = z.Bytes(), "gzip", -1
	if ps := f.export(c, f.token("acme", "alice")); ps != nil {
		t.Fatalf("partial success %v", ps)
	}
	if n, session := recordable(t, []otlpCapture{c}); f.onLog(session) != n {
		t.Fatalf("%d of %d envelopes on the log", f.onLog(session), n)
	}
}

// metric is the sum of a counter's series whose labels hold match.
func (f *fixture) metric(name, match string) float64 {
	f.t.Helper()
	_, body := f.do("GET", "/metrics", "", nil)
	sum := 0.0
	for _, line := range strings.Split(string(body), "\n") {
		if strings.HasPrefix(line, name+"{") && strings.Contains(line, match) {
			var v float64
			fields := strings.Fields(line)
			_ = json.Unmarshal([]byte(fields[len(fields)-1]), &v)
			sum += v
		}
	}
	return sum
}
