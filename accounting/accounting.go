package accounting

import (
	"cmp"
	"context"
	"io"
	"log/slog"
	"slices"

	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/spinehq/spine/streams"
)

// ProjectorName is the accounting projector's durable consumer and
// checkpoint name.
const ProjectorName = "accounting"

// Subjects are the SPINE_SESSIONS subjects accounting projects: session
// starts, running usage, telemetry and ends, worker disconnects and plan
// budget events.
func Subjects() []string {
	return []string{streams.SessionSubject("*", streams.TypeSessionStart),
		streams.SessionSubject("*", streams.TypeSessionUsage), streams.SessionSubject("*", streams.TypeSessionTelemetry),
		streams.SessionSubject("*", streams.TypeSessionEnd), streams.WorkerSubject("*"), PlanSubject("*")}
}

// Config configures an Accounting handler.
type Config struct {
	Logger     *slog.Logger          // nil: discard
	Registerer prometheus.Registerer // nil: metrics not registered
	// ModelCap is how many distinct models each org may give their own metric label
	// before the rest share "other"; 0 means DefaultModelCap.
	ModelCap int
}

// Accounting projects router calls and plan budgets. It is a
// streams.Handler; run it with streams.NewProjector on StreamSessions with
// Filter Subjects(), and set the projector's OnCommit to a.Committed so
// metrics count only what was committed.
type Accounting struct {
	log      *slog.Logger
	m        *metrics
	pending  []*Call   // rows of the last Apply, counted in metrics on commit
	rewrites []rewrite // and the rows it wrote again
}

var _ streams.Handler = (*Accounting)(nil)

// New returns an Accounting handler.
func New(cfg Config) *Accounting {
	a := &Accounting{log: cfg.Logger, m: newMetrics(cfg.Registerer, cfg.ModelCap)}
	if a.log == nil {
		a.log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return a
}

// Apply applies a batch inside tx. Session envelopes that break a rule are
// skipped, not dead-lettered: the recorder reads the same messages, applies
// the same rules and dead-letters them once. Plan events are accounting's
// own, so their rejections are returned.
func (a *Accounting) Apply(ctx context.Context, tx pgx.Tx, msgs []streams.Message) ([]error, error) {
	b := &batch{tx: tx, sessions: map[string]*session{}}
	results := make([]error, len(msgs))
	envs := make([]*streams.Envelope, len(msgs))
	for i, m := range msgs {
		if isPlanSubject(m.Subject) {
			results[i] = b.budget(m)
			continue
		}
		if e, err := streams.Decode(m.Data); err == nil && streams.CheckSubject(e, m.Subject) == nil {
			envs[i] = e.Redacted() // model, effort and usage as the recorder stores them
		}
	}
	if err := b.preload(ctx, envs); err != nil {
		return nil, err
	}
	for i, e := range envs {
		if e == nil {
			continue
		}
		if err := b.apply(ctx, msgs[i], e); err != nil {
			return nil, err
		}
	}
	if err := b.flush(ctx); err != nil {
		return nil, err
	}
	a.pending, a.rewrites = b.calls, b.rewrites
	return results, nil
}

// Committed counts the last applied batch's router calls in the metrics.
// It has the signature of streams.ProjectorConfig.OnCommit.
func (a *Accounting) Committed(uint64, []streams.Message) {
	for _, c := range a.pending {
		a.m.observe(c)
	}
	for _, rw := range a.rewrites {
		a.m.observeGrowth(rw)
	}
	a.pending, a.rewrites = nil, nil
}

// batch is the state of one Apply: the sessions it touches and the rows it
// writes, flushed once at the end.
type batch struct {
	tx       pgx.Tx
	sessions map[string]*session
	calls    []*Call
	rewrites []rewrite // rows of earlier batches written again (telemetry.go)
	requests []*request
	seen     map[[2]string]bool // the requests' (session, request id)
	budgets  []*Budget
}

func (b *batch) preload(ctx context.Context, envs []*streams.Envelope) error {
	ids := streams.SessionIDs(envs)
	if len(ids) == 0 {
		return nil
	}
	found, err := loadSessions(ctx, b.tx, ids)
	for _, s := range found {
		b.sessions[s.ID] = s
	}
	return err
}

func (b *batch) apply(ctx context.Context, m streams.Message, e *streams.Envelope) error {
	switch e.Type {
	case streams.TypeSessionStart:
		b.start(m, e)
	case streams.TypeSessionUsage:
		b.usage(m, e)
	case streams.TypeSessionTelemetry:
		b.telemetry(m, e)
	case streams.TypeSessionEnd:
		b.end(m, e)
	case streams.TypeWorkerDisconnect:
		return b.disconnect(ctx, m, e)
	}
	return nil
}

// callerMismatch reports whether a message that came through HTTP ingest
// (and so names its verified caller) acts on another owner's session; the
// recorder refuses those, so accounting ignores them.
func callerMismatch(m streams.Message, org, member string) bool {
	hOrg := m.Header.Get(streams.HeaderOrg)
	return hOrg != "" && (hOrg != org || m.Header.Get(streams.HeaderMember) != member)
}

// runnerMismatch reports whether a desktop runner's message acts on a
// session that runner did not start; the recorder refuses those too.
func runnerMismatch(m streams.Message, workerID string) bool {
	r := m.Header.Get(streams.HeaderRunner)
	return r != "" && r != workerID
}

// start makes the session, or claims a telemetry session of the same
// owner for the start's door, reopening one that had ended (reopen.go).
// Any other start of a session accounting knows is a duplicate, or another
// owner's: the recorder dead-letters it.
func (b *batch) start(m streams.Message, e *streams.Envelope) {
	if callerMismatch(m, e.Owner.Org, e.Owner.Member) {
		return
	}
	switch s := b.sessions[e.SessionID]; {
	case s == nil:
		b.sessions[e.SessionID] = &session{ID: e.SessionID, Org: e.Owner.Org, Member: e.Owner.Member, App: e.App,
			PlanID: e.PlanID, WorkerID: e.WorkerID, StartedAt: e.At, isNew: true}
	case s.telemetry() && s.Org == e.Owner.Org && s.Member == e.Owner.Member:
		s.adopt(e)
	}
}

func (b *batch) end(m streams.Message, e *streams.Envelope) {
	s := b.sessions[e.SessionID]
	if s == nil || s.ended() || callerMismatch(m, s.Org, s.Member) || runnerMismatch(m, s.WorkerID) {
		return
	}
	if s.telemetry() { // its requests are its row, whatever this end reports
		b.endTelemetry(s, e.Status, e.At)
		s.Swept = sweptEnd(m, e) // its telemetry may run it again (reopen.go)
		return
	}
	b.addCall(s, callFromEnd(s, e, sweptEnd(m, e)))
}

// usage keeps a running session's usage so far (session.usage), for an
// end that carries none of its own (see callFromEnd); nothing counts it
// otherwise.
func (b *batch) usage(m streams.Message, e *streams.Envelope) {
	s := b.sessions[e.SessionID]
	if s == nil || s.ended() || callerMismatch(m, s.Org, s.Member) || runnerMismatch(m, s.WorkerID) || e.Usage == nil {
		return
	}
	s.Usage, s.TotalCost, s.changed = e.Usage, e.TotalCost, true
}

// sweptEnd reports whether e is the idle sweeper's end (recorder.Sweeper):
// a time it was judged by, from a trusted producer (no caller header).
// The recorder checks its id as well; accounting takes the sweeper's word.
func sweptEnd(m streams.Message, e *streams.Envelope) bool {
	return e.SweptSince != nil && m.Header.Get(streams.HeaderOrg) == ""
}

// disconnect ends every live session on the worker, each with its one row.
// One that came through HTTP ingest ends only its caller's sessions.
func (b *batch) disconnect(ctx context.Context, m streams.Message, e *streams.Envelope) error {
	live, err := liveOnWorker(ctx, b.tx, e.WorkerID)
	if err != nil {
		return err
	}
	for _, s := range live {
		if b.sessions[s.ID] == nil {
			b.sessions[s.ID] = s
		}
	}
	for _, s := range b.sorted() {
		switch {
		case s.WorkerID != e.WorkerID || s.ended() || callerMismatch(m, s.Org, s.Member):
		case s.telemetry():
			b.endTelemetry(s, "disconnected", e.At)
		default:
			b.addCall(s, callFromDisconnect(s, e.At))
		}
	}
	return nil
}

func (b *batch) sorted() []*session {
	out := make([]*session, 0, len(b.sessions))
	for _, s := range b.sessions {
		out = append(out, s)
	}
	slices.SortFunc(out, func(x, y *session) int { return cmp.Compare(x.ID, y.ID) })
	return out
}

// budget decodes a plan event; a bad one is returned as a rejection.
func (b *batch) budget(m streams.Message) error {
	bu, err := DecodeBudget(m.Data)
	if err != nil {
		return err
	}
	if want := PlanSubject(bu.PlanID); want != m.Subject {
		return streams.Reject(streams.ReasonSubject, "published on %q, plan.budget belongs on %q", m.Subject, want)
	}
	b.budgets = append(b.budgets, bu)
	return nil
}
