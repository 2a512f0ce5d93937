package pages_test

import (
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/spinehq/spine/accounting"
	"github.com/spinehq/spine/recorder"
	"github.com/spinehq/spine/server/pages"
	"github.com/spinehq/spine/views"
)

// A session's duration is said in its two largest units on every page; a
// running one says so.
func TestDuration(t *testing.T) {
	start := time.Date(2026, 11, 1, 9, 0, 0, 0, time.UTC)
	for d, want := range map[time.Duration]string{
		400 * time.Millisecond:                "under 1 s",
		45 * time.Second:                      "45 s",
		100 * time.Second:                     "1 min 40 s",
		2*time.Hour + 5*time.Minute:           "2 h 05 min",
		76*time.Hour + 10*time.Minute:         "3 d 4 h",
		59*time.Second + 600*time.Millisecond: "1 min 00 s",
	} {
		end := start.Add(d)
		if got := pages.Duration(start, &end); got != want {
			t.Errorf("%v: %q, want %q", d, got, want)
		}
	}
	if got := pages.Duration(start, nil); got != "running" {
		t.Errorf("a running session's duration: %q", got)
	}
}

// A status is said in words, the same on every page.
func TestStatus(t *testing.T) {
	for status, want := range map[string]string{"running": "running", "done": "done", "timeout": "timed out",
		"disconnected": "disconnected"} {
		if got := pages.Status(status); got != want {
			t.Errorf("%s: %q, want %q", status, got, want)
		}
	}
}

// renderCall renders a session page's facts with its router call c.
func renderCall(t *testing.T, c *accounting.Call) string {
	t.Helper()
	var b strings.Builder
	v := &pages.SessionView{Session: &views.Session{Session: &recorder.Session{ID: "s1", Status: "done"}, Call: c}}
	if err := pages.Render(&b, "session-summary.part", pages.View{Data: v}); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// A router call's cost is written as every sum of dollars is, with at
// least cents; one never reported says so, never $0.
func TestRouterCallCost(t *testing.T) {
	for cost, want := range map[float64]string{0.5: "$0.50 (as reported)", 0.24722425: "$0.24722425 (as reported)",
		3: "$3.00 (as reported)"} {
		page := renderCall(t, &accounting.Call{Billing: "metered", Status: "done", TotalCost: &cost})
		if !strings.Contains(page, `data-call="cost">`+want+`</dd>`) {
			t.Errorf("%v: %s", cost, page)
		}
	}
	page := renderCall(t, &accounting.Call{Billing: "unknown", Status: "failed"})
	if !strings.Contains(page, `data-call="cost"><span class="silent">not reported</span>`) || strings.Contains(page, "$0") {
		t.Errorf("no cost: %s", page)
	}
}

// A step's long output is cut at a character, never inside one, and the
// page says how much it left out.
func TestStepOutputCutAtACharacter(t *testing.T) {
	out := strings.Repeat("a", 64<<10-1) + "é" + "tail"
	r := pages.StepResult{Output: out}
	if shown := r.Shown(); !utf8.ValidString(shown) || len(shown) != 64<<10-1 || r.Cut() != len(out)-len(shown) {
		t.Fatalf("shown %d bytes (valid UTF-8: %v), cut %d of %d", len(shown), utf8.ValidString(shown), r.Cut(), len(out))
	}
	if r := (pages.StepResult{Output: "short"}); r.Shown() != "short" || r.Cut() != 0 {
		t.Fatalf("a short output: %q, cut %d", r.Shown(), r.Cut())
	}
}

// One dropped action is said in the singular.
func TestOneActionDropped(t *testing.T) {
	for n, want := range map[int]string{1: "Incomplete: 1 action dropped.", 53: "Incomplete: 53 actions dropped."} {
		var b strings.Builder
		v := &pages.SessionView{Session: &views.Session{Session: &recorder.Session{ID: "s1", Status: "done", DroppedActions: n}}}
		if err := pages.Render(&b, "session-summary.part", pages.View{Data: v}); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(b.String(), want) {
			t.Errorf("%d dropped: %s", n, b.String())
		}
	}
}

// The empty dead letters row spans the table's columns: five for a
// member, six (with the member's) for an admin.
func TestEmptyDeadLettersSpansTheTable(t *testing.T) {
	for org, want := range map[bool]string{false: `colspan="5"`, true: `colspan="6"`} {
		var b strings.Builder
		if err := pages.Render(&b, "deadletter-rows", pages.View{Data: pages.DeadLettersView{WholeOrg: org}}); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(b.String(), want) {
			t.Errorf("whole org %v: %s", org, b.String())
		}
	}
}
