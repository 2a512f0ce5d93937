package pages_test

import (
	"testing"
	"time"

	"github.com/spinehq/spine/server/pages"
	"github.com/spinehq/spine/views"
)

// A session's duration is said in its two largest units; a running one
// says so.
func TestSessionDuration(t *testing.T) {
	start := time.Date(2026, 11, 1, 9, 0, 0, 0, time.UTC)
	for d, want := range map[time.Duration]string{
		400 * time.Millisecond:                "under 1 s",
		45 * time.Second:                      "45 s",
		200 * time.Second:                     "3 min 20 s",
		2*time.Hour + 5*time.Minute:           "2 h 05 min",
		76*time.Hour + 10*time.Minute:         "3 d 4 h",
		59*time.Second + 600*time.Millisecond: "1 min 00 s",
	} {
		end := start.Add(d)
		l := pages.SessionLine{SessionRow: views.SessionRow{StartedAt: start, EndedAt: &end}}
		if got := l.Duration(); got != want {
			t.Errorf("%v: %q, want %q", d, got, want)
		}
	}
	if got := (pages.SessionLine{SessionRow: views.SessionRow{StartedAt: start}}).Duration(); got != "running" {
		t.Errorf("a running session's duration: %q", got)
	}
}
