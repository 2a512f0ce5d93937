package node_test

import (
	"context"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/spinehq/spine/accounting"
	"github.com/spinehq/spine/desktop"
	"github.com/spinehq/spine/internal/spinetest"
	"github.com/spinehq/spine/streams"
)

// pageGet fetches a page with a bearer token and returns its status,
// headers and body.
func (f *fixture) pageGet(path, token string) (int, http.Header, string) {
	f.t.Helper()
	req, err := http.NewRequest("GET", f.base+path, nil)
	if err != nil {
		f.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		f.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(body)
}

// record ingests envelopes as token's, in batches within the ingest
// limit, and waits for the projectors.
func (f *fixture) record(token string, envs ...*streams.Envelope) {
	f.t.Helper()
	for len(envs) > 0 {
		n := min(len(envs), 2000)
		f.ingest(token, envs[:n]...)
		envs = envs[n:]
	}
	f.waitCaughtUp()
}

var tags = regexp.MustCompile(`<[^>]*>`)

// text is markup as a reader hears it: tags gone, entities decoded, spaces folded.
func text(markup string) string {
	return strings.Join(strings.Fields(html.UnescapeString(tags.ReplaceAllString(markup, " "))), " ")
}

// byID is the text of the element with the given id (a dd or td: no nesting of its own kind).
func byID(t *testing.T, page, id string) string {
	t.Helper()
	m := regexp.MustCompile(`id="` + regexp.QuoteMeta(id) + `"[^>]*>(.*?)</(dd|td|p)>`).FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("page has no element %q", id)
	}
	return text(m[1])
}

// byCall is the text of the router call's value key (router_call.html's
// data-call) on a session's page.
func byCall(t *testing.T, page, key string) string {
	t.Helper()
	_, call, ok := strings.Cut(page, `id="router-call"`)
	m := regexp.MustCompile(`data-call="` + regexp.QuoteMeta(key) + `"[^>]*>(.*?)</dd>`).FindStringSubmatch(call)
	if !ok || m == nil {
		t.Fatalf("the page's router call has no %q", key)
	}
	return text(m[1])
}

func finishedSession(id string, cost *float64) []*streams.Envelope {
	start := spinetest.Start(id)
	start.PlanID, start.StepID, start.TaskID = "plan-7", "step-2", ""
	mcp := spinetest.MCP(id, "c1", "query")
	mcp.Status, mcp.Error = "error", "table not found"
	end := spinetest.End(id, "failed", "claude-opus-4-5", "high")
	end.Error, end.Billing, end.TotalCost = "tests failed", "metered", cost
	end.Usage = &streams.Usage{InputTokens: 120, OutputTokens: 45, CacheReadTokens: 1000, CacheWriteTokens: 30,
		ReasoningTokens: 7}
	status := 200
	return []*streams.Envelope{start, spinetest.Text(id, 1, "building\n"), spinetest.Stderr(id, 2, "warning: slow\n"),
		spinetest.Command(id, 3, "go test ./..."), spinetest.Write(id, 4, "main.go", "package main\n"),
		spinetest.Event(id, 5, &streams.Event{Action: "fetch", URL: "https://example.com/doc", Status: &status}),
		spinetest.Event(id, 6, &streams.Event{Action: "mcp_call", Server: "memql", Tool: "query", CallID: "c1"}),
		mcp, end}
}

// A finished session's page says what GET /v1/sessions/{id} and its
// router-call row (GET /v1/provenance/{id}) say, in words; stdout and
// stderr are told apart, and every step is there with what came of it.
func TestSessionPageFactsAreTheAPIs(t *testing.T) {
	f := newFixture(t)
	alice := f.token("acme", "alice")
	cost := 0.5
	f.record(alice, finishedSession("s1", &cost)...)

	code, _, page := f.pageGet("/ui/sessions/s1", alice)
	if code != 200 {
		t.Fatalf("page = %d %s", code, page)
	}
	_, body := f.do("GET", "/v1/sessions/s1", alice, nil)
	var s struct {
		Status, App, Kind, Model, Effort, WorkerID, Error, Member string
		ExitCode                                                  *int
		StartedAt                                                 time.Time
		EndedAt                                                   *time.Time
	}
	if err := json.Unmarshal(body, &s); err != nil || s.EndedAt == nil {
		t.Fatalf("session = %s (%v)", body, err)
	}
	for id, want := range map[string]string{"f-status": s.Status, "f-app": s.App, "f-kind": s.Kind,
		"f-model": s.Model, "f-effort": s.Effort, "f-machine": s.WorkerID, "f-error": s.Error, "f-member": s.Member,
		"f-exit-code": strconv.Itoa(*s.ExitCode), "f-started": s.StartedAt.UTC().Format("2006-01-02 15:04:05 UTC"),
		"f-ended":    s.EndedAt.UTC().Format("2006-01-02 15:04:05 UTC"),
		"f-duration": "1 min 40 s", "f-plan": "plan plan-7 , step step-2"} {
		if got := byID(t, page, id); got != want {
			t.Errorf("%s: page says %q, the API %q", id, got, want)
		}
	}

	_, body = f.do("GET", "/v1/provenance/s1", alice, nil)
	var tr struct{ RouterCall *accounting.Call }
	if err := json.Unmarshal(body, &tr); err != nil || tr.RouterCall == nil || tr.RouterCall.Tokens == nil ||
		tr.RouterCall.TotalCost == nil {
		t.Fatalf("provenance = %s (%v)", body, err)
	}
	c, n := tr.RouterCall, tr.RouterCall.Tokens
	for id, want := range map[string]string{"f-billing": c.Billing, "f-billing-signal": c.BillingSignal} {
		if got := byID(t, page, id); got != want {
			t.Errorf("%s: page says %q, the router call %q", id, got, want)
		}
	}
	for key, want := range map[string]string{"billing": c.Billing + " (signal " + c.BillingSignal + ")",
		"input": fmt.Sprint(n.Input), "output": fmt.Sprint(n.Output), "cache-read": fmt.Sprint(n.CacheRead),
		"cache-write": fmt.Sprint(n.CacheWrite), "reasoning": fmt.Sprint(n.Reasoning), "total": fmt.Sprint(n.Total),
		"cost": "$0.50 (as reported)", "model": c.ServedModel, "door": c.Door, "status": c.Status} {
		if got := strings.ReplaceAll(byCall(t, page, key), ",", ""); got != want {
			t.Errorf("router call's %s: page says %q, the router call %q", key, got, want)
		}
	}

	for _, want := range []string{
		`<li class="chunk stdout" data-seq="1"><span class="seq">1</span><div><span class="stream">stdout</span><pre>building`,
		`<li class="chunk stderr" data-seq="2"><span class="seq">2</span><div><span class="stream">stderr</span><pre>warning: slow`,
		`<code>go test ./...</code>`, `ok · exit code 0`, `<summary>output (3 bytes)</summary><pre>ok`,
		`<code>main.go</code> · 13 bytes · <a href="/ui/files/blake3:`,
		`<code>https://example.com/doc</code>`, `status 200`,
		`<span class="failed">failed</span>: table not found · 12 ms · as the MCP node saw it`,
		`<a href="/ui/provenance/art-run-s1.s2">`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %s", want)
		}
	}
	if strings.Contains(page, "Incomplete") || strings.Contains(page, "data-tail") {
		t.Error("a complete, ended session's page says it is incomplete or tails")
	}
	// The file link opens the content with the page's sign-in.
	link := regexp.MustCompile(`href="(/ui/files/blake3:[0-9a-f]+)">content`).FindStringSubmatch(page)
	if code, _, got := f.pageGet(link[1], alice); code != 200 || got != "package main\n" {
		t.Errorf("%s = %d %q", link[1], code, got)
	}
}

// A cost the app never reported is "not reported" on the page, never $0.
func TestSessionPageNullCostIsNotReported(t *testing.T) {
	f := newFixture(t)
	alice := f.token("acme", "alice")
	f.record(alice, finishedSession("s1", nil)...)
	_, _, page := f.pageGet("/ui/sessions/s1", alice)
	if got := byCall(t, page, "cost"); got != "not reported" {
		t.Fatalf("cost = %q", got)
	}
	if strings.Contains(page, "$0") {
		t.Fatal("page shows $0 for a cost never reported")
	}
}

// covered lists the seqs of a transcript's lines in markup (a hole's from
// its first to its last) and of its steps, in order.
func covered(markup string) (lines, steps []int) {
	for _, m := range regexp.MustCompile(`data-seq="(\d+)"(?: data-to="(\d+)")?`).FindAllStringSubmatch(markup, -1) {
		from, _ := strconv.Atoi(m[1])
		to := from
		if m[2] != "" {
			to, _ = strconv.Atoi(m[2])
		}
		for seq := from; seq <= to; seq++ {
			lines = append(lines, seq)
		}
	}
	for _, m := range regexp.MustCompile(`data-idx="(\d+)"`).FindAllStringSubmatch(markup, -1) {
		n, _ := strconv.Atoi(m[1])
		steps = append(steps, n)
	}
	return lines, steps
}

// A long session's page holds one page of each list; the next pages
// continue where it stopped, repeating and skipping nothing, holes on a
// page's edge included.
func TestSessionPagePages(t *testing.T) {
	f := newFixture(t)
	alice := f.token("acme", "alice")
	envs := []*streams.Envelope{spinetest.Start("s1")}
	const chunks, steps = 1200, 250
	missing := func(seq int64) bool { return (seq >= 500 && seq <= 504) || seq == 1001 }
	for seq := int64(1); seq <= chunks; seq++ {
		if !missing(seq) {
			envs = append(envs, spinetest.Text("s1", seq, fmt.Sprintf("line %d\n", seq)))
		}
	}
	for seq := int64(chunks + 1); seq <= chunks+steps; seq++ {
		envs = append(envs, spinetest.Command("s1", seq, fmt.Sprintf("echo %d", seq)))
	}
	f.record(alice, envs...)

	_, _, page := f.pageGet("/ui/sessions/s1", alice)
	if n := strings.Count(page, "<li class=\"chunk ") + strings.Count(page, "<li class=\"hole\""); n != 500 {
		t.Fatalf("first render holds %d lines, want 500", n)
	}
	got, gotSteps := covered(page)
	if len(gotSteps) != 100 || got[len(got)-1] != 504 {
		t.Fatalf("first render holds %d steps, want 100, and lines to seq %d, want 504 (a hole)", len(gotSteps), got[len(got)-1])
	}
	for _, into := range []string{"#transcript", "#steps"} {
		for _, more := range followMore(t, f, alice, page, into) {
			l, s := covered(more)
			got, gotSteps = append(got, l...), append(gotSteps, s...)
		}
	}
	if !oneToN(got, chunks) || !oneToN(gotSteps, steps) {
		t.Fatalf("pages cover seqs %v and steps %v: want 1..%d and 1..%d, each once", runs(got), runs(gotSteps), chunks, steps)
	}
}

func oneToN(got []int, n int) bool {
	for i, v := range got {
		if v != i+1 {
			return false
		}
	}
	return len(got) == n
}

// runs folds 1 2 3 5 into "1-3 5", for a failure message.
func runs(ns []int) string {
	var b strings.Builder
	for i := 0; i < len(ns); i++ {
		j := i
		for j+1 < len(ns) && ns[j+1] == ns[j]+1 {
			j++
		}
		fmt.Fprintf(&b, "%d-%d ", ns[i], ns[j])
		i = j
	}
	return b.String()
}

// followMore clicks a page's "more" link for list into as spine.js does
// (fragment=1, then each answer's Spine-More) and returns each page it got.
func followMore(t *testing.T, f *fixture, token, page, into string) []string {
	t.Helper()
	m := regexp.MustCompile(`data-more="` + into + `" href="([^"]+)"`).FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("no more link for %s", into)
	}
	var out []string
	for next := html.UnescapeString(m[1]); next != ""; {
		if len(out) > 10 {
			t.Fatal("more pages than there are")
		}
		code, h, body := f.pageGet(next+"&fragment=1", token)
		if code != 200 || strings.Contains(body, "<html") {
			t.Fatalf("%s = %d %s", next, code, body)
		}
		out = append(out, body)
		next = h.Get("Spine-More")
	}
	return out
}

// A hole is shown where it is, and the page says the recording is
// incomplete and by how much.
func TestSessionPageShowsHoles(t *testing.T) {
	f := newFixture(t)
	alice := f.token("acme", "alice")
	envs := []*streams.Envelope{spinetest.Start("s1")}
	for _, seq := range []int64{1, 2, 3, 40, 58, 59} {
		envs = append(envs, spinetest.Text("s1", seq, fmt.Sprintf("line %d\n", seq)))
	}
	f.record(alice, envs...)
	_, _, page := f.pageGet("/ui/sessions/s1", alice)
	if got := byID(t, page, "incomplete"); !strings.HasPrefix(got, "Incomplete: 53 actions dropped.") {
		t.Errorf("incomplete = %q", got)
	}
	lines := regexp.MustCompile(`(?s)<li class="(chunk stdout|hole)" data-seq="(\d+)"[^>]*>.*?</li>`).FindAllStringSubmatch(page, -1)
	var order []string
	for _, l := range lines {
		order = append(order, l[2]+map[string]string{"hole": "h", "chunk stdout": ""}[l[1]])
	}
	if got := strings.Join(order, " "); got != "1 2 3 4h 40 41h 58 59" {
		t.Errorf("transcript order %q, want 1 2 3 4h 40 41h 58 59", got)
	}
	for _, want := range []string{"seq 4–39 missing", "36 chunks never arrived", "seq 41–57 missing"} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
}

// Another member's session, its parts and its events are the 404 page of
// a session that does not exist, byte for byte; the org's admin sees it.
func TestSessionPageOfAnotherMemberIsMissing(t *testing.T) {
	f := newFixture(t)
	alice, bob := f.token("acme", "alice"), f.token("acme", "bob")
	f.record(alice, finishedSession("s1", nil)...)
	for _, part := range []string{"", "/transcript?fragment=1", "/steps?fragment=1&tail=1", "/artifacts?fragment=1", "/events"} {
		c1, _, theirs := f.pageGet("/ui/sessions/s1"+part, bob)
		c2, _, missing := f.pageGet("/ui/sessions/nope"+part, bob)
		if c1 != 404 || c2 != 404 || theirs != missing || !strings.Contains(missing, "session not found") {
			t.Errorf("%s: other member %d, missing %d; same body %v", part, c1, c2, theirs == missing)
		}
	}
	admin := f.adminToken("acme", "carol")
	code, _, page := f.pageGet("/ui/sessions/s1", admin)
	if code != 200 || byID(t, page, "f-member") != "alice" {
		t.Fatalf("admin's view = %d", code)
	}
	if strings.Contains(page, `href="/ui/files/`) {
		t.Error("the admin's page links alice's files, which the file route would refuse them")
	}
	if other, _, _ := f.pageGet("/ui/sessions/s1", f.adminToken("globex", "dan")); other != 404 {
		t.Errorf("another org's admin = %d", other)
	}
	if code, _ := f.do("GET", "/ui/sessions/s1?after=x", alice, nil); code != 400 {
		t.Errorf("?after=x = %d", code)
	}
}

// A session a runner recorded for a task links to the task's remote
// session; while it runs it says there is no router call yet.
func TestSessionPageLinksItsRemoteSession(t *testing.T) {
	f := newFixture(t)
	alice := f.token("acme", "alice")
	r := f.desktopRunner(alice, "alice-laptop")
	sess := decode[desktop.Session](t, f.mustDo(201, "POST", "/v1/remote-sessions", alice,
		map[string]any{"target": "desktop", "instructions": "x"}))
	c := r.claim(sess.LatestTaskID)
	f.ingest(r.token, runnerStart("live-1", c.Task.ID), spinetest.Text("live-1", 1, "working\n"))
	f.waitCaughtUp()
	_, _, page := f.pageGet("/ui/sessions/live-1", alice)
	if got, want := byID(t, page, "f-remote"), sess.ID+" (task "+c.Task.ID+" )"; got != want {
		t.Errorf("remote session = %q, want %q", got, want)
	}
	if !strings.Contains(page, `<a href="/ui/remote/`+sess.ID+`">`) {
		t.Error("no link to the remote session's page")
	}
	for _, id := range []string{"f-billing", "f-billing-signal"} {
		if got := byID(t, page, id); got != "no router call yet" {
			t.Errorf("%s while running = %q", id, got)
		}
	}
}

// A running session's page follows it: its events say "ready", then
// "change" as chunks come (the tail then gets only what is new, with
// Spine-After the last seq it covers), then "end" once the session has
// ended and its router call is in; the stream ends there.
func TestSessionPageFollowsTheSession(t *testing.T) {
	f := newFixture(t)
	alice := f.token("acme", "alice")
	f.record(alice, spinetest.Start("s1"), spinetest.Text("s1", 1, "one\n"))
	_, _, page := f.pageGet("/ui/sessions/s1", alice)
	tail := regexp.MustCompile(`<ol class="transcript" data-tail="([^"]+)" data-after="1" data-part="transcript" aria-live="polite">`).FindStringSubmatch(page)
	if tail == nil || !strings.Contains(page, `data-events="/ui/sessions/s1/events"`) {
		t.Fatal("a running session's page neither tails its transcript after seq 1 nor follows its events")
	}

	ctx, cancel := context.WithTimeout(context.Background(), spinetest.WaitTimeout)
	defer cancel()
	_, events := f.openEvents(ctx, "/ui/sessions/s1/events", alice)
	nextEvent(t, events, "ready")
	f.record(alice, spinetest.Text("s1", 2, "two\n"), spinetest.Stderr("s1", 4, "four\n"))
	nextEvent(t, events, "change")

	code, h, items := f.pageGet(html.UnescapeString(tail[1])+"&after=1&fragment=1", alice)
	if l, _ := covered(items); code != 200 || h.Get("Spine-After") != "4" || fmt.Sprint(l) != "[2 3 4]" ||
		strings.Contains(items, "<ol") {
		t.Fatalf("tail after 1 = %d, Spine-After %q, lines %v: %s", code, h.Get("Spine-After"), l, items)
	}
	f.record(alice, spinetest.End("s1", "done", "", ""))
	nextEvent(t, events, "end")
	for events.Scan() { // the end's data, then the stream ends
		if strings.HasPrefix(events.Text(), "event:") {
			t.Fatalf("the stream goes on after end: %q", events.Text())
		}
	}
	if ctx.Err() != nil {
		t.Fatal("the stream did not end after end")
	}
	_, _, summary := f.pageGet("/ui/sessions/s1?fragment=1", alice)
	if byID(t, summary, "f-status") != "done" || byID(t, summary, "f-billing") != "unknown" {
		t.Fatalf("summary after the end: %s", summary)
	}
}

var callMarkup = regexp.MustCompile(`(?s)<dl class="facts call">.*?</dl>`)

// A router call is one rendering on every page that shows it: the session's
// page, its provenance and its plan's page show the same markup for it,
// its cost written with at least cents as the cost page writes dollars.
func TestRouterCallIsOneRendering(t *testing.T) {
	f := newFixture(t)
	alice := f.token("acme", "alice")
	cost := 0.5
	f.record(alice, finishedSession("s1", &cost)...)
	var first string
	for _, path := range []string{"/ui/sessions/s1", "/ui/provenance/s1", "/ui/plans/plan-7"} {
		code, _, page := f.pageGet(path, alice)
		calls := callMarkup.FindAllString(page, -1)
		if code != 200 || len(calls) != 1 || !strings.Contains(calls[0], "$0.50 (as reported)") {
			t.Fatalf("%s = %d, router calls %q", path, code, calls)
		}
		if first == "" {
			first = calls[0]
		} else if calls[0] != first {
			t.Errorf("%s shows the router call as\n%s\nthe session's page as\n%s", path, calls[0], first)
		}
	}
}

// A cursor past any a session's lists can hold is a 400 page, never a
// 500: a step's idx is an int4, a seq a bigint.
func TestSessionPageCursorsOutOfRange(t *testing.T) {
	f := newFixture(t)
	alice := f.token("acme", "alice")
	f.record(alice, finishedSession("s1", nil)...)
	for _, path := range []string{"/ui/sessions/s1?steps=99999999999", "/ui/sessions/s1/steps?after=2147483648&fragment=1",
		"/ui/sessions/s1?after=99999999999999999999", "/ui/sessions/s1?steps=-1"} {
		if code, _, page := f.pageGet(path, alice); code != 400 || !strings.Contains(page, "must be an integer from 0 to") {
			t.Errorf("%s = %d %s", path, code, page)
		}
	}
	for _, path := range []string{"/ui/sessions/s1?steps=2147483647", "/ui/sessions/s1?after=9223372036854775807"} {
		if code, _, _ := f.pageGet(path, alice); code != 200 {
			t.Errorf("%s = %d", path, code)
		}
	}
}
