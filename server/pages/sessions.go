package pages

import (
	"fmt"

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
