package pages

import "github.com/spinehq/spine/desktop"

// RemoteListView is the remote sessions page (/ui/remote): a page of the
// caller's remote sessions, most recently active first, and the presence
// of the caller's runners.
type RemoteListView struct {
	Sessions []desktop.Session
	Runners  []desktop.Runner
	// More is the next page's URL ("" on the last page).
	More string
	// Live: the first page, whose list refreshes on every change; a later
	// page (?after=) stands still.
	Live bool
	// PresenceMinutes is how recently a runner was seen to be present.
	PresenceMinutes int
}
