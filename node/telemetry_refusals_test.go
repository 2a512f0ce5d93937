package node_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/spinehq/spine/apps"
	"github.com/spinehq/spine/auth"
	"github.com/spinehq/spine/desktop"
	"github.com/spinehq/spine/internal/config"
	"github.com/spinehq/spine/internal/spinetest"
)

// rpcStatus is a google.rpc.Status body, protobuf or JSON as its
// Content-Type says; ok is false when the body is neither.
type rpcStatus struct {
	Code    uint64 `json:"code"`
	Message string `json:"message"`
}

func statusOf(resp *http.Response, body []byte) (rpcStatus, bool) {
	var s rpcStatus
	switch resp.Header.Get("Content-Type") {
	case "application/json":
		return s, json.Unmarshal(body, &s) == nil && !bytes.Contains(body, []byte(`"error"`))
	case "application/x-protobuf":
		for len(body) > 0 {
			num, typ, n := protowire.ConsumeTag(body)
			if n < 0 {
				return s, false
			}
			body = body[n:]
			switch {
			case num == 1 && typ == protowire.VarintType:
				s.Code, n = protowire.ConsumeVarint(body)
			case num == 2 && typ == protowire.BytesType:
				var m []byte
				m, n = protowire.ConsumeBytes(body)
				s.Message = string(m)
			default:
				return s, false
			}
			if n < 0 {
				return s, false
			}
			body = body[n:]
		}
		return s, true
	}
	return s, false
}

// otlpRequest is a POST of body to path with the headers given ("" for
// none), answered by the node.
func (f *fixture) otlpRequest(path, token, contentType, contentEncoding string, body []byte) (*http.Response, []byte) {
	f.t.Helper()
	req, err := http.NewRequest("POST", f.base+path, io.MultiReader(bytes.NewReader(body))) // chunked, as Claude Code posts
	if err != nil {
		f.t.Fatal(err)
	}
	for k, v := range map[string]string{"Authorization": "Bearer " + token, "Content-Type": contentType, "Content-Encoding": contentEncoding} {
		if v != "" && v != "Bearer " {
			req.Header.Set(k, v)
		}
	}
	resp, err := (&http.Client{Timeout: spinetest.WaitTimeout}).Do(req)
	if err != nil {
		f.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, b
}

func gzipOf(t *testing.T, b []byte) []byte {
	t.Helper()
	var z bytes.Buffer
	zw := gzip.NewWriter(&z)
	if _, err := zw.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return z.Bytes()
}

// emptyRecords is a logs export of one resource and one scope holding n
// empty log records: two bytes each in protobuf, three in JSON.
func emptyRecords(n int, protobuf bool) []byte {
	if protobuf {
		records := bytes.Repeat([]byte{2<<3 | 2, 0}, n) // ScopeLogs.log_records, empty
		scope := protowire.AppendBytes([]byte{2<<3 | 2}, records)
		return protowire.AppendBytes([]byte{1<<3 | 2}, scope)
	}
	return []byte(`{"resourceLogs":[{"scopeLogs":[{"logRecords":[` + strings.TrimSuffix(strings.Repeat("{},", n), ",") + `]}]}]}`)
}

// An export of millions of empty log records (8 MB of protobuf, 9 MB of
// JSON, a few KB gzipped) is refused 413 with a google.rpc.Status in the
// request's encoding before it is decoded, where it decoded into millions
// of events; one of telemetry.MaxRecords records is taken.
func TestOTLPDoorRefusesMillionsOfEmptyRecords(t *testing.T) {
	f := newFixture(t)
	alice := f.token("acme", "alice")
	for _, c := range []struct {
		contentType string
		body        []byte
	}{
		{"application/x-protobuf", emptyRecords(4_000_000, true)},
		{"application/json", emptyRecords(3_000_000, false)},
	} {
		resp, body := f.otlpRequest("/otlp/v1/logs", alice, c.contentType, "gzip", gzipOf(t, c.body))
		st, ok := statusOf(resp, body)
		if resp.StatusCode != http.StatusRequestEntityTooLarge || !ok || st.Code != 8 || resp.Header.Get("Content-Type") != c.contentType ||
			!strings.Contains(st.Message, "at most 10000 log records") {
			t.Fatalf("%s: %d %s %q", c.contentType, resp.StatusCode, resp.Header.Get("Content-Type"), body)
		}
	}
	c := otlpCapture{Path: "/otlp/v1/logs", ContentType: "application/x-protobuf", ContentEncoding: "gzip", ContentLength: -1,
		body: gzipOf(t, emptyRecords(10_000, true))}
	if ps := f.export(c, alice); ps != nil {
		t.Fatalf("10,000 records: partial success %v", ps)
	}
}

// A gzip body is held in the in-flight budget as it decompresses, not once
// it is: with the org's share nearly spent, a body that grows past 20 MiB
// is refused 429 busy (a google.rpc.Status, Retry-After) when the budget
// is asked for its first bytes past the share, where it used to be
// decompressed to the 20 MiB bound first (413).
func TestGzipExportIsHeldAsItGrows(t *testing.T) {
	f := startLimited(t, func(c *config.Config) { c.InflightBytes = 4 << 20 }) // acme's share: 2 MiB
	alice := f.token("acme", "alice")
	f.trickle("/otlp/v1/logs", alice, 128<<10) // holds 1 MiB of it (an export weighs 8 a byte)
	resp, body := f.otlpRequest("/otlp/v1/logs", alice, "application/x-protobuf", "gzip", gzipOf(t, make([]byte, 21<<20)))
	st, ok := statusOf(resp, body)
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" || !ok || st.Code != 8 {
		t.Fatalf("a gzip body past the budget: %d, Retry-After %q, %q", resp.StatusCode, resp.Header.Get("Retry-After"), body)
	}
}

// Every refusal of the telemetry doors, in the words the caller reads:
// an OTLP route's are google.rpc.Status bodies in the request's encoding
// (JSON when its Content-Type is neither), a 400's message quoting
// nothing of the body; the hook door refuses a compressed body; a runner
// token opens no telemetry door, an ingest token no other route.
func TestTelemetryDoorsRefusals(t *testing.T) {
	f := newFixture(t)
	alice, ingest := f.token("acme", "alice"), f.ingestToken("acme", "root")
	runner, err := f.n.Signer.Mint(auth.Claims{Org: "acme", Member: "alice", Audience: desktop.AudienceRunner}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	protobuf, js := "application/x-protobuf", "application/json"
	bomb := gzipOf(t, make([]byte, 20<<20+1))
	secretBody := []byte("\x0a\x05secret-in-the-body")
	for _, c := range []struct {
		name, path, token, contentType, contentEncoding string
		body                                            []byte
		status                                          int
		code                                            uint64 // the Status's; 0: spine's {"error"}
		statusType                                      string // the answer's Content-Type
	}{
		{"over 20 MiB gunzipped", "/otlp/v1/logs", alice, protobuf, "gzip", bomb, 413, 8, protobuf},
		{"metrics over 20 MiB gunzipped", "/otlp/v1/metrics", alice, js, "gzip", bomb, 413, 8, js},
		{"a Content-Type of neither", "/otlp/v1/logs", alice, "text/plain", "", []byte("{}"), 415, 3, js},
		{"a Content-Encoding spine does not read", "/otlp/v1/logs", alice, protobuf, "zstd", []byte("x"), 415, 3, protobuf},
		{"not OTLP", "/otlp/v1/logs", alice, protobuf, "", secretBody, 400, 3, protobuf},
		{"not OTLP JSON", "/otlp/v1/metrics", alice, js, "", []byte(`{"resourceMetrics":[{"secret-in-the-body":}]}`), 400, 3, js},
		{"a broken gzip stream", "/otlp/v1/logs", alice, js, "gzip", []byte("\x1f\x8bsecret-in-the-body"), 400, 3, js},
		{"a runner token", "/otlp/v1/logs", runner, protobuf, "", nil, 401, 0, js},
		{"a runner token on the hooks", "/v1/hooks/claude-code", runner, js, "", hookBody(t, "SessionEnd"), 401, 0, js},
		{"no token", "/otlp/v1/metrics", "", protobuf, "", nil, 401, 0, js},
		{"an ingest token on another route", "/v1/ingest", ingest, js, "", []byte("[]"), 401, 0, js},
		{"a compressed hook", "/v1/hooks/claude-code", alice, js, "gzip", gzipOf(t, hookBody(t, "SessionEnd")), 415, 0, js},
	} {
		resp, body := f.otlpRequest(c.path, c.token, c.contentType, c.contentEncoding, c.body)
		st, isStatus := statusOf(resp, body)
		switch {
		case resp.StatusCode != c.status || resp.Header.Get("Content-Type") != c.statusType:
			t.Errorf("%s: %d %s %q, want %d %s", c.name, resp.StatusCode, resp.Header.Get("Content-Type"), body, c.status, c.statusType)
		case c.code != 0 && (!isStatus || st.Code != c.code || st.Message == ""):
			t.Errorf("%s: %q, want a google.rpc.Status of code %d", c.name, body, c.code)
		case c.code == 0 && !bytes.Contains(body, []byte(`"error"`)):
			t.Errorf("%s: %q, want spine's {\"error\"}", c.name, body)
		case bytes.Contains(body, []byte("secret-in-the-body")):
			t.Errorf("%s: the answer quotes the body: %q", c.name, body)
		}
	}
	if status, _ := f.do("GET", "/v1/sessions", ingest, nil); status != http.StatusUnauthorized {
		t.Errorf("an ingest token reads sessions: %d, want 401", status)
	}
}

// A hook is answered within server.HookDeadline whatever the database
// does: with its session's claim blocked (another transaction's
// uncommitted claim of the same id holds the row), the door answers 503
// with Retry-After once its deadline passes, rather than waiting on the
// lock with Claude Code waiting on it.
func TestHookDoorAnswersWhenTheClaimHangs(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	tx, err := f.n.Pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, `INSERT INTO session_owners (session_id, org, member) VALUES ($1, 'acme', 'bob')`,
		apps.SessionID("claude-code", hookSession)); err != nil {
		t.Fatal(err)
	}
	resp, body := f.otlpRequest("/v1/hooks/claude-code", f.token("acme", "alice"), "application/json", "", hookBody(t, "UserPromptSubmit"))
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("a hook whose claim hangs: %d %q, Retry-After %q", resp.StatusCode, body, resp.Header.Get("Retry-After"))
	}
}
