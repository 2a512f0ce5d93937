package accounting

import (
	"context"
	"time"

	"github.com/spinehq/spine/streams"
)

// Telemetry sessions (docs/accounting.md#telemetry-sessions). The apps'
// own telemetry (session.telemetry) can be the first a session accounting
// hears of: it makes the session, origin telemetry, and each request it
// reports goes into the ledger (router_call_requests), the first copy of
// each request id kept. The session's one router-call row is written at
// its end — the telemetry's end, the sweeper's, its worker's disconnect —
// from the ledger, and written again when a request comes after it. A
// session.start from another door claims it: from then on its row is that
// door's end, and its telemetry is kept in the ledger but not counted. One
// that had ended runs again for the door (reopen.go).

// telemetry applies one session.telemetry. One for another owner's session
// is ignored: the recorder dead-letters it (session_exists).
func (b *batch) telemetry(m streams.Message, e *streams.Envelope) {
	if callerMismatch(m, e.Owner.Org, e.Owner.Member) {
		return
	}
	s := b.sessions[e.SessionID]
	if s == nil {
		s = &session{ID: e.SessionID, Org: e.Owner.Org, Member: e.Owner.Member, App: e.App, WorkerID: e.WorkerID,
			StartedAt: e.At, Origin: originTelemetry, isNew: true}
		b.sessions[e.SessionID] = s
	}
	if s.Org != e.Owner.Org || s.Member != e.Owner.Member {
		return
	}
	t := e.Telemetry
	if t.Kind == streams.TelemetryRequest {
		b.request(s, e)
	}
	if !s.telemetry() {
		return // another door's session: its end is its row
	}
	if s.Swept && t.Kind != streams.TelemetryRequest {
		s.reopen() // only quiet: the sweeper ended it, its app goes on
	}
	if e.Billing != "" && e.Billing != s.BillingSignal {
		s.BillingSignal, s.changed, s.touched = e.Billing, true, true
	}
	if t.Kind == streams.TelemetryEnd && !s.ended() {
		b.endTelemetry(s, "done", e.At)
	}
}

// request puts a reported request in the batch's ledger rows, unless the
// batch has it already (a copy sent again: the first stays, as it does
// across batches).
func (b *batch) request(s *session, e *streams.Envelope) {
	t := e.Telemetry
	k := [2]string{s.ID, t.RequestID}
	if b.seen[k] {
		return
	}
	if b.seen == nil {
		b.seen = map[[2]string]bool{}
	}
	b.seen[k] = true
	b.requests = append(b.requests, &request{SessionID: s.ID, RequestID: t.RequestID, Org: s.Org, Member: s.Member,
		Model: t.Model, Effort: t.Effort, Tokens: Normalise(t.Usage), Cost: streams.CostText(t.TotalCost), At: e.At,
		reopen: s.reopens})
	s.touched = s.touched || s.telemetry()
}

// endTelemetry ends a telemetry session; flush fills its row from the
// ledger (telemetryRows).
func (b *batch) endTelemetry(s *session, status string, at time.Time) {
	s.row, s.touched = s.call(status, at), true
}

// telemetryRows makes the rows of the batch's sessions that follow their
// ledger, once the requests they count are in it: a row for each telemetry
// session that ended in this batch, and a rewrite of each that ended before
// and whose telemetry reported more since; for a session reopened, its
// telemetry's row as of the reopen, or its next end's (reopen.go): an end
// of a session whose row was there before the batch writes it again.
func (b *batch) telemetryRows(ctx context.Context) error {
	sessions := b.sorted()
	var summed []string
	for _, s := range sessions {
		if s.followsLedger() {
			summed = append(summed, s.ID)
		}
	}
	sums := map[string]*ledgerSum{}
	if len(summed) > 0 {
		var err error
		if sums, err = ledgerSums(ctx, b.tx, summed); err != nil {
			return err
		}
	}
	var earlier []ended // rows of earlier batches to write again
	for _, s := range sessions {
		row := s.doorRow
		if row == nil && s.row != nil && s.followsLedger() {
			sums[s.ID].fill(s.row, s.rowSignal())
			row = s.row
		}
		switch {
		case row != nil && !s.hadRow:
			b.calls = append(b.calls, row) // the first row of the session
		case row != nil || s.followsLedger():
			earlier = append(earlier, ended{s, row})
		}
	}
	return b.rewriteEarlier(ctx, earlier, sums)
}

// ended is a session whose row an earlier batch wrote, and the row of its
// end in this batch (nil: none, the old row takes its ledger's new sums).
type ended struct {
	s   *session
	row *Call
}

// rewriteEarlier writes again the rows earlier batches wrote for the
// sessions: their ledger's new sums, or the row of a reopened session's
// next end.
func (b *batch) rewriteEarlier(ctx context.Context, earlier []ended, sums map[string]*ledgerSum) error {
	if len(earlier) == 0 {
		return nil
	}
	ids := make([]string, len(earlier))
	for i, e := range earlier {
		ids[i] = e.s.ID
	}
	old, err := callsByID(ctx, b.tx, ids)
	if err != nil {
		return err
	}
	for _, e := range earlier {
		o := old[e.s.ID]
		if o == nil {
			continue // no row to rewrite: cannot happen, an ended session has one
		}
		if e.row != nil {
			b.rewrites = append(b.rewrites, rewrite{old: o, new: e.row})
			continue
		}
		n := *o
		sums[e.s.ID].fill(&n, e.s.rowSignal())
		if rw := (rewrite{old: o, new: &n}); rw.changed() {
			b.rewrites = append(b.rewrites, rw)
		}
	}
	return nil
}
