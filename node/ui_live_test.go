package node_test

import (
	"bufio"
	"context"
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
