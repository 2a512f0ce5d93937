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
		afterReopen: s.reopenedNow})
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
// and whose telemetry reported more since; for a session a start reopened,
// its telemetry's row as of that start, or its door's end's (reopen.go).
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
	var earlier []*session // rows of earlier batches to write again
	for _, s := range sessions {
		switch {
		case s.row != nil && s.doorRow != nil:
			b.calls = append(b.calls, s.doorRow) // its telemetry's row was never written
		case s.row != nil && s.followsLedger():
			sums[s.ID].fill(s.row, s.BillingSignal)
			b.calls = append(b.calls, s.row)
		case s.doorRow != nil || s.followsLedger():
			earlier = append(earlier, s)
		}
	}
	return b.rewriteEarlier(ctx, earlier, sums)
}

// rewriteEarlier writes again the rows earlier batches wrote for the
// sessions: their ledger's new sums, or a reopened session's door's row.
func (b *batch) rewriteEarlier(ctx context.Context, earlier []*session, sums map[string]*ledgerSum) error {
	if len(earlier) == 0 {
		return nil
	}
	ids := make([]string, len(earlier))
	for i, s := range earlier {
		ids[i] = s.ID
	}
	old, err := callsByID(ctx, b.tx, ids)
	if err != nil {
		return err
	}
	for _, s := range earlier {
		o := old[s.ID]
		if o == nil {
			continue // no row to rewrite: cannot happen, an ended session has one
		}
		if s.doorRow != nil {
			b.rewrites = append(b.rewrites, rewrite{old: o, new: s.doorRow})
			continue
		}
		n := *o
		sums[s.ID].fill(&n, s.BillingSignal)
		if rw := (rewrite{old: o, new: &n}); rw.changed() {
			b.rewrites = append(b.rewrites, rw)
		}
	}
	return nil
}
