package node_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/spinehq/spine/server"
	"github.com/spinehq/spine/streams"
	"github.com/spinehq/spine/telemetry"
)

// An org's ingest token records an event as the member an admin mapped
// its identity to. Unmapped, the export is a partial success naming every
// record refused, nothing is on the log nor claimed, and the identity is
// in the admins' unmapped list with its count; once mapped, the same
// export is recorded as that member and the identity leaves the list.
func TestIngestTokenRecordsMappedMembers(t *testing.T) {
	f := newFixture(t)
	ingest, admin := f.ingestToken("acme", "root"), f.adminToken("acme", "root")
	caps := otlpCaptures(t, "claude-code-json-logs")
	n, session := recordable(t, caps)
	var refused int64
	for _, c := range caps {
		ps := f.export(c, ingest)
		if ps == nil || !strings.Contains(ps.ErrorMessage, "no org admin mapped") {
			t.Fatalf("%s: partial success %v, want the unmapped refused", c.File, ps)
		}
		refused += ps.RejectedLogRecords
	}
	if refused != int64(n) || f.onLog(session) != 0 || f.holder(session) != "" {
		t.Fatalf("refused %d of %d; %d on the log, held by %q: want all refused, none recorded", refused, n,
			f.onLog(session), f.holder(session))
	}
	var unmapped server.UnmappedList
	status, body := f.do("GET", "/v1/members/unmapped", admin, nil)
	if err := json.Unmarshal(body, &unmapped); status != http.StatusOK || err != nil || len(unmapped.Unmapped) != 1 ||
		unmapped.Unmapped[0].Kind != "user" || unmapped.Unmapped[0].Events != int64(n) {
		t.Fatalf("unmapped: %d %s", status, body)
	}
	if status, _ := f.do("GET", "/v1/members/unmapped", f.token("acme", "alice"), nil); status != http.StatusForbidden {
		t.Fatalf("a member reads the unmapped: %d, want 403", status)
	}
	mapTo := `{"kind":"user","value":"` + unmapped.Unmapped[0].Value + `","member":"ada"}`
	if status, body := f.do("POST", "/v1/members/identities", admin, []byte(mapTo)); status != http.StatusOK {
		t.Fatalf("map: %d %s", status, body)
	}
	for _, c := range caps {
		if ps := f.export(c, ingest); ps != nil {
			t.Fatalf("%s after mapping: partial success %v", c.File, ps)
		}
	}
	if f.onLog(session) != n || f.holder(session) != "acme/ada" || f.lastOnLog(session).Header.Get(streams.HeaderMember) != "ada" {
		t.Fatalf("after mapping: %d on the log held by %q, want %d held by acme/ada", f.onLog(session), f.holder(session), n)
	}
	if _, body := f.do("GET", "/v1/members/unmapped", admin, nil); !strings.Contains(string(body), `"unmapped":[]`) &&
		!strings.Contains(string(body), `"unmapped":null`) {
		t.Fatalf("still unmapped after mapping: %s", body)
	}
}

// A hook names no user: with an ingest token it is its session's holder's
// (when of the token's org), and a hook of a session no one holds is
// answered 200 and recorded under no one.
func TestIngestTokenHooksFollowTheirSession(t *testing.T) {
	f := newFixture(t)
	ingest := f.ingestToken("acme", "root")
	prompt := hookBody(t, "UserPromptSubmit")
	if status, body := f.do("POST", "/v1/hooks/claude-code", ingest, prompt); status != http.StatusOK || string(body) != "{}\n" {
		t.Fatalf("hook of a session no one holds: %d %q", status, body)
	}
	if f.onLog(hookSession) != 0 {
		t.Fatal("a hook of a session no one holds was recorded")
	}
	if got := f.metric("spine_telemetry_events_total", `result="no_member"`); got != 1 {
		t.Fatalf("no_member counted %v, want 1", got)
	}
	alice := f.token("acme", "alice")
	for _, c := range otlpCaptures(t, "claude-code-json-logs") {
		f.export(c, alice) // alice's own token: her session
	}
	before := f.onLog(hookSession)
	if status, _ := f.do("POST", "/v1/hooks/claude-code", ingest, prompt); status != http.StatusOK {
		t.Fatalf("hook: %d", status)
	}
	if f.onLog(hookSession) != before+1 || f.lastOnLog(hookSession).Header.Get(streams.HeaderMember) != "alice" {
		t.Fatalf("the hook of alice's session: %d on the log (was %d), last by %q", f.onLog(hookSession), before,
			f.lastOnLog(hookSession).Header.Get(streams.HeaderMember))
	}
	other := f.ingestToken("globex", "root")
	if status, _ := f.do("POST", "/v1/hooks/claude-code", other, hookBody(t, "SessionEnd")); status != http.StatusOK ||
		f.onLog(hookSession) != before+1 {
		t.Fatalf("another org's ingest token wrote into alice's session: %d, %d on the log", status, f.onLog(hookSession))
	}
}

// A session id another member started is not recorded under the caller,
// by either door: OTLP says so in its partial success, the hook answers
// 200 {} all the same.
func TestTelemetryOfAnotherMembersSession(t *testing.T) {
	f := newFixture(t)
	caps := otlpCaptures(t, "claude-code-json-logs")
	_, session := recordable(t, caps)
	start := &streams.Envelope{V: 1, Type: streams.TypeSessionStart, ID: "bob-start", At: time.Now().UTC(), SessionID: session,
		App: "claude-code", Kind: "run", Owner: &streams.Owner{Org: "acme", Member: "bob"}}
	if status, body := f.do("POST", "/v1/ingest", f.token("acme", "bob"), envelopes(t, start)); status != http.StatusMultiStatus ||
		!strings.Contains(string(body), `"accepted":1`) {
		t.Fatalf("bob's start: %d %s", status, body)
	}
	alice := f.token("acme", "alice")
	for _, c := range caps {
		ps := f.export(c, alice)
		if ps == nil || ps.RejectedLogRecords == 0 || !strings.Contains(ps.ErrorMessage, "another owner holds") {
			t.Fatalf("%s: partial success %v", c.File, ps)
		}
	}
	if status, body := f.do("POST", "/v1/hooks/claude-code", alice, hookBody(t, "PostToolUseFailure")); status != http.StatusOK || string(body) != "{}\n" {
		t.Fatalf("hook: %d %q", status, body)
	}
	if f.onLog(session) != 0 || f.holder(session) != "acme/bob" {
		t.Fatalf("%d telemetry envelopes of bob's session on the log, held by %q", f.onLog(session), f.holder(session))
	}
}

// unmappedOf is the admins' unmapped list of org, as KIND:VALUE=EVENTS.
func (f *fixture) unmappedOf(org string) []string {
	f.t.Helper()
	var page server.UnmappedList
	status, body := f.do("GET", "/v1/members/unmapped", f.adminToken(org, "root"), nil)
	if err := json.Unmarshal(body, &page); status != http.StatusOK || err != nil {
		f.t.Fatalf("unmapped: %d %s", status, body)
	}
	var out []string
	for _, u := range page.Unmapped {
		out = append(out, fmt.Sprintf("%s:%s=%d", u.Kind, u.Value, u.Events))
	}
	return out
}

// An ingest token's events that name no user, of a session no member of
// the org holds, are not recorded, and not lost unseen either: the
// admins' unmapped list counts them under their machine (Codex with a
// provider's key sends host.name) or, naming none, their app (a hook
// before its session's first export).
func TestEventsNamingNoUserAreListed(t *testing.T) {
	f := newFixture(t)
	ingest := f.ingestToken("acme", "root")
	if status, _ := f.do("POST", "/v1/hooks/claude-code", ingest, hookBody(t, "UserPromptSubmit")); status != http.StatusOK {
		t.Fatalf("hook: %d", status)
	}
	caps := otlpCaptures(t, "codex-json-logs")
	n, session := recordable(t, caps)
	for _, c := range caps {
		if ps := f.export(c, ingest); ps == nil || !strings.Contains(ps.ErrorMessage, "naming no user") {
			t.Fatalf("%s: partial success %v, want the records naming no user refused", c.File, ps)
		}
	}
	want := []string{"machine:vm=" + fmt.Sprint(n), "none:claude-code=1"}
	if got := f.unmappedOf("acme"); !slices.Equal(got, want) || f.onLog(session) != 0 {
		t.Fatalf("unmapped %v, want %v; %d on the log", got, want, f.onLog(session))
	}
	out := f.unmappedOf("acme")
	var page server.UnmappedList // a page's cursor may be a machine's
	status, body := f.do("GET", "/v1/members/unmapped?limit=1", f.adminToken("acme", "root"), nil)
	if err := json.Unmarshal(body, &page); err != nil || status != http.StatusOK || page.Next != "machine:vm" {
		t.Fatalf("first page: %d %s", status, body)
	}
	if status, body := f.do("GET", "/v1/members/unmapped?after="+page.Next, f.adminToken("acme", "root"), nil); status != http.StatusOK ||
		!strings.Contains(string(body), `"kind":"none"`) {
		t.Fatalf("after %s: %d %s (all: %v)", page.Next, status, body, out)
	}
}

// An export the log cannot take is answered 503 and counts nothing in
// the unmapped list (its exporter sends it again, which would count its
// events twice), while the metric still says what became of each record:
// one export of a mapped user's records (Codex signed in) and an unmapped
// one's (Claude Code's install id), two protobuf bodies end to end.
func TestUnavailableExportCountsItsRefusalsOnlyInTheMetric(t *testing.T) {
	f := newFixture(t)
	mapTo := `{"kind":"email","value":"apprig@example.test","member":"ada"}`
	if status, body := f.do("POST", "/v1/members/identities", f.adminToken("acme", "root"), []byte(mapTo)); status != http.StatusOK {
		t.Fatalf("map: %d %s", status, body)
	}
	mapped := otlpCaptures(t, "codex-json-chatgpt-logs-2")[0]
	d, err := telemetry.DecodeLogs(mapped.body, telemetry.JSON)
	if err != nil {
		t.Fatal(err)
	}
	unmapped := otlpCaptures(t, "claude-code-protobuf-logs-1")[0]
	n, _ := recordable(t, []otlpCapture{unmapped})
	both, _ := proto.Marshal(d)
	unmapped.body = append(both, unmapped.body...)
	if err := f.n.JS.DeleteStream(context.Background(), streams.StreamSessions); err != nil {
		t.Fatal(err)
	}
	resp, body := f.postOTLP(unmapped, f.ingestToken("acme", "root"))
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("the log unavailable: %d %q", resp.StatusCode, body)
	}
	if got := f.unmappedOf("acme"); len(got) != 0 {
		t.Fatalf("unmapped after a 503: %v, want none counted", got)
	}
	if got := f.metric("spine_telemetry_events_total", `result="unmapped"`); got != float64(n) {
		t.Fatalf("unmapped in the metric %v, want %d", got, n)
	}
}
