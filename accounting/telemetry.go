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
// session.start from another door while it runs claims it: from then on
// its row is that door's end, and its telemetry is kept in the ledger but
// not counted.

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
		Model: t.Model, Effort: t.Effort, Tokens: Normalise(t.Usage), Cost: streams.CostText(t.TotalCost), At: e.At})
	s.touched = true
}

// endTelemetry ends a telemetry session; flush writes its row from the
// ledger (telemetryRows).
func (b *batch) endTelemetry(s *session, status string, at time.Time) {
	s.EndedAt, s.endStatus, s.changed, s.touched = &at, status, true, true
}

// adopt makes a telemetry session the door's whose start this is: the
// start's app, plan, machine (when it names one) and time, origin door.
func (s *session) adopt(e *streams.Envelope) {
	s.Origin, s.App, s.PlanID, s.StartedAt, s.changed = originDoor, e.App, e.PlanID, e.At, true
	if e.WorkerID != "" {
		s.WorkerID = e.WorkerID
	}
}

// telemetryRows makes the rows of the batch's telemetry sessions from
// their ledger, once this batch's requests are in it: a row for each that
// ended in this batch, and a rewrite of each that ended before and whose
// telemetry reported more since.
func (b *batch) telemetryRows(ctx context.Context) error {
	var ids, earlier []string
	for _, s := range b.sorted() {
		if s.telemetry() && s.ended() && s.touched {
			ids = append(ids, s.ID)
			if s.endStatus == "" {
				earlier = append(earlier, s.ID)
			}
		}
	}
	if len(ids) == 0 {
		return nil
	}
	sums, err := ledgerSums(ctx, b.tx, ids)
	if err != nil {
		return err
	}
	for _, id := range ids {
		if s := b.sessions[id]; s.endStatus != "" {
			c := s.call(s.endStatus, *s.EndedAt)
			sums[id].fill(c, s.BillingSignal)
			b.calls = append(b.calls, c)
		}
	}
	if len(earlier) == 0 {
		return nil
	}
	old, err := callsByID(ctx, b.tx, earlier)
	if err != nil {
		return err
	}
	for _, id := range earlier {
		o := old[id]
		if o == nil {
			continue // no row to rewrite: cannot happen, an ended session has one
		}
		n := *o
		sums[id].fill(&n, b.sessions[id].BillingSignal)
		if rw := (rewrite{old: o, new: &n}); rw.changed() {
			b.rewrites = append(b.rewrites, rw)
		}
	}
	return nil
}
