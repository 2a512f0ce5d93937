package accounting

import (
	"slices"

	"github.com/spinehq/spine/streams"
)

// A session.start from another door (spine collect, spine run) for a
// telemetry session of the same owner makes it that door's, as the
// recorder's merge does (docs/accounting.md#telemetry-sessions): the
// start's app, plan, machine and time, origin door, no usage until the
// door reports its own. One whose telemetry had ended it runs again, so
// the door's end is counted: its row, which the telemetry's end wrote,
// stays the telemetry's until then, and that end writes it again (a
// rewrite, so cost_days follows and the session is still one call). So
// does a telemetry session the idle sweeper ended when its telemetry goes
// on (other than a request): it was only quiet, and its next end (its
// telemetry's, the sweeper's again, a disconnect) writes its row again
// from its ledger, as the recorder runs it again. A reopened session's row
// is as of the reopen whatever batches the log was cut into: requests
// after it are ledgered, and counted only by that next end.

// reopen makes an ended session run again.
func (s *session) reopen() {
	s.Reopened, s.Swept, s.EndedAt, s.changed = true, false, nil, true
	s.reopens, s.reopenSignal = s.reopens+1, s.BillingSignal
}

// adopt makes a telemetry session the door's whose start this is.
func (s *session) adopt(e *streams.Envelope) {
	if s.ended() {
		s.reopen()
	}
	s.Origin, s.App, s.PlanID, s.StartedAt, s.changed = originDoor, e.App, e.PlanID, e.At, true
	s.Usage, s.TotalCost = nil, nil // the telemetry's are not the door's
	if e.WorkerID != "" {
		s.WorkerID = e.WorkerID
	}
}

// addCall adds the row an end makes. A reopened session has one already,
// its telemetry's: the end's replaces it (telemetryRows).
func (b *batch) addCall(s *session, c *Call) {
	if s.Reopened {
		s.doorRow = c
		return
	}
	b.calls = append(b.calls, c)
}

// requestsByReopen splits the batch's requests into those its telemetry
// rows count and those that wait (waits), which flush ledgers once the
// rows are summed. Most batches have none of those.
func (b *batch) requestsByReopen() (counted, after []*request) {
	if !slices.ContainsFunc(b.requests, b.waits) {
		return b.requests, nil
	}
	for _, r := range b.requests {
		if b.waits(r) {
			after = append(after, r)
		} else {
			counted = append(counted, r)
		}
	}
	return counted, after
}

// waits reports whether r came after the last reopen of its session in
// this batch, which its row is as of: r counts only at the session's next
// end.
func (b *batch) waits(r *request) bool {
	s := b.sessions[r.SessionID]
	return s.asOfReopen() && r.reopen == s.reopens
}
