package pages

import (
	"fmt"
	"time"

	"github.com/spinehq/spine/views"
)

// SessionsView is what the sessions page (/ui/sessions) shows: a page of
// the caller's sessions, the filters that selected them and the links that
// keep those filters.
type SessionsView struct {
	Rows    []SessionLine
	Running int // views.SessionsPage.Running
	Filter  views.SessionFilter
	Day     string // Filter.Day as the form shows it ("" = any day)
	Admin   bool   // the page lists the org's sessions: a member column and filter
	// Live is true on the newest page: its rows and count refresh on each
	// change; an older page stays as it was read.
	Live bool
	// RowsURL and CountURL are the live parts' sources; NewestURL is the
	// first page and OlderURL the next ("" on the last), all with the filters.
	RowsURL, CountURL, NewestURL, OlderURL string
	// Apps, Statuses and Billings are the filters' choices.
	Apps, Statuses, Billings []string
}

// Filtered reports whether any filter is set.
func (v SessionsView) Filtered() bool { return v.Filter != views.SessionFilter{} }

// RunningText says how many of the selected sessions run now, in words.
func (v SessionsView) RunningText() string {
	which := ""
	if v.Filtered() {
		which = " these filters select"
	}
	switch {
	case v.Running > views.MaxRunningCount:
		return fmt.Sprintf("More than %d sessions%s running now.", views.MaxRunningCount, which)
	case v.Running == 1:
		return "1 session" + which + " running now."
	}
	return fmt.Sprintf("%d sessions%s running now.", v.Running, which)
}

// SessionLine is one row of the sessions page.
type SessionLine struct {
	views.SessionRow
	// Own says the row is the viewer's session: only then does it link
	// its plan, whose page reads the viewer's own sessions (an admin's
	// row of another member's shows the plan's id alone).
	Own bool
}

// Lines wraps a page's rows for the template, for the viewer member me.
func Lines(rows []views.SessionRow, me string) []SessionLine {
	out := make([]SessionLine, len(rows))
	for i, r := range rows {
		out[i] = SessionLine{SessionRow: r, Own: r.Member == me}
	}
	return out
}

// Running reports whether the session has not ended.
func (l SessionLine) Running() bool { return l.EndedAt == nil }

// Started is the start in UTC.
func (l SessionLine) Started() string { return when(l.StartedAt) }

// StatusText is the status in words.
func (l SessionLine) StatusText() string {
	if l.Status == "timeout" {
		return "timed out"
	}
	return l.Status
}

// Duration is how long the session ran, "running" while it runs.
func (l SessionLine) Duration() string {
	if l.EndedAt == nil {
		return "running"
	}
	return duration(l.EndedAt.Sub(l.StartedAt))
}

// duration says d in its two largest units: 45 s, 3 min 20 s, 2 h 05 min,
// 3 d 4 h.
func duration(d time.Duration) string {
	s := int64(d.Round(time.Second) / time.Second)
	switch {
	case d < time.Second:
		return "under 1 s"
	case s < 60:
		return fmt.Sprintf("%d s", s)
	case s < 3600:
		return fmt.Sprintf("%d min %02d s", s/60, s%60)
	case s < 86400:
		return fmt.Sprintf("%d h %02d min", s/3600, s%3600/60)
	}
	return fmt.Sprintf("%d d %d h", s/86400, s%86400/3600)
}
