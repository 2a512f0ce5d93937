package node_test

import (
	"bufio"
	"context"
	"html"
	"regexp"
	"strings"
	"testing"

	"github.com/spinehq/spine/internal/spinetest"
	"github.com/spinehq/spine/streams"
	"github.com/spinehq/spine/views"
)

// The sessions list's mark moves with what the list shows of a session (a
// start, a step, the end), not with its chunks: a running session's every
// stdout chunk made every open list fetch its rows again.
func TestSessionsMarkFollowsWhatTheListShows(t *testing.T) {
	f := newFixture(t)
	alice := f.token("acme", "alice")
	ctx := context.Background()
	mark := func() string {
		t.Helper()
		m, err := views.SessionsMark(ctx, f.n.Pool, streams.Owner{Org: "acme", Member: "alice"})
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	f.record(alice, spinetest.Start("s1"))
	started := mark()
	f.record(alice, spinetest.Text("s1", 1, "building\n"), spinetest.Stderr("s1", 2, "warning\n"))
	if mark() != started {
		t.Fatal("the mark moved with a chunk the list does not show")
	}
	f.record(alice, spinetest.Command("s1", 3, "go test ./..."))
	stepped := mark()
	if stepped == started {
		t.Fatal("the mark did not move with a step (the list shows the steps)")
	}
	f.record(alice, spinetest.End("s1", "done", "", ""))
	if mark() == stepped {
		t.Fatal("the mark did not move with the end")
	}
}

// A session page's change names the parts of the page that moved: a
// chunk the transcript, an event the steps too, never the facts until the
// end; then "end".
func TestSessionPageChangesNameTheirParts(t *testing.T) {
	f := newFixture(t)
	alice := f.token("acme", "alice")
	f.record(alice, spinetest.Start("s1"), spinetest.Text("s1", 1, "one\n"))
	events := f.pageEvents("/ui/sessions/s1/events", alice)
	nextEvent(t, events, "ready")
	f.record(alice, spinetest.Text("s1", 2, "two\n"))
	if got := nextChange(t, events); !strings.Contains(got, `"parts":["transcript"]`) {
		t.Fatalf("a chunk's change: %s", got)
	}
	f.record(alice, spinetest.Command("s1", 3, "go test ./..."))
	if got := nextChange(t, events); !strings.Contains(got, `"parts":["transcript","steps","artifacts"]`) {
		t.Fatalf("a command's change: %s", got)
	}
	f.record(alice, spinetest.End("s1", "done", "", ""))
	for {
		if !events.Scan() {
			t.Fatalf("the stream ended before end: %v", events.Err())
		}
		if events.Text() == "event: end" {
			break
		}
		if data, ok := strings.CutPrefix(events.Text(), "data: "); ok && !strings.Contains(data, `"facts"`) {
			t.Fatalf("the end's change does not name the facts: %s", data)
		}
	}
}

// nextChange is the data of the stream's next "change".
func nextChange(t *testing.T, events *bufio.Scanner) string {
	t.Helper()
	nextEvent(t, events, "change")
	return nextLine(t, events)
}

// mcpEvent is the session's own report of an MCP call, which the MCP
// node's record of the same call (spinetest.MCP) may follow.
func mcpEvent(session string, seq int64, callID string) *streams.Envelope {
	return spinetest.Event(session, seq, &streams.Event{Action: "mcp_call", Server: "memql", Tool: "query", CallID: callID})
}

// A result that lands on a step the page already shows (the MCP node's
// record of a call the session reported first) comes in the steps' tail:
// the tail follows the run's observations, and the step comes again, once,
// with both results; a new step comes too. Before, the tail followed step
// indexes and the late result never showed live.
func TestSessionPageStepsTailHasLateResults(t *testing.T) {
	f := newFixture(t)
	alice := f.token("acme", "alice")
	f.record(alice, spinetest.Start("s1"), mcpEvent("s1", 1, "c1"))
	_, _, page := f.pageGet("/ui/sessions/s1", alice)
	m := regexp.MustCompile(`<ol class="steps" data-tail="([^"]+)" data-after="(\d+)"`).FindStringSubmatch(page)
	if m == nil || !strings.Contains(page, `id="step-1"`) {
		t.Fatalf("the running session's steps are not tailed:\n%s", page)
	}
	f.record(alice, spinetest.MCP("s1", "c1", "query"), spinetest.Command("s1", 2, "go test ./..."))
	code, h, items := f.pageGet(html.UnescapeString(m[1])+"&fragment=1&after="+m[2], alice)
	if code != 200 || strings.Count(items, `id="step-1"`) != 1 || !strings.Contains(items, "as the MCP node saw it") ||
		!strings.Contains(items, `id="step-2"`) || strings.Contains(items, "<ol") {
		t.Fatalf("the tail after observation %s = %d:\n%s", m[2], code, items)
	}
	after := h.Get("Spine-After")
	if _, _, again := f.pageGet(html.UnescapeString(m[1])+"&fragment=1&after="+after, alice); strings.TrimSpace(again) != "" {
		t.Fatalf("the tail after observation %s (its Spine-After) is not empty:\n%s", after, again)
	}
}
