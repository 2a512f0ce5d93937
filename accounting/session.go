package accounting

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/spinehq/spine/streams"
)

// Where a session came from, as accounting_sessions.origin says.
const (
	// originDoor: a session.start made it (spine run, collect, a runner,
	// an import), or claimed it from telemetry; its row is its end's.
	originDoor = ""
	// originTelemetry: the apps' own telemetry made it and no start came
	// while it ran; its row is its requests' sum (telemetry.go).
	originTelemetry = "telemetry"
)

// session is accounting's own memory of a session's start: enough to write
// its router-call row and to find it from a worker disconnect.
type session struct {
	ID, Org, Member, App, PlanID, WorkerID string
	StartedAt                              time.Time
	EndedAt                                *time.Time
	// Usage and TotalCost are the usage so far its producer last reported
	// (session.usage), nil when none: the row of an end that reports none
	// of its own (the sweeper's, a disconnect) takes them.
	Usage     *streams.Usage
	TotalCost *float64
	// Origin is originTelemetry or originDoor; BillingSignal the last
	// non-empty billing its telemetry named ("" = silent).
	Origin, BillingSignal string
	// Reopened: it ran again after its telemetry's end (or the sweeper's)
	// had written its row, for a door's start or for its telemetry after
	// the sweeper (reopen.go); its next end writes that row again.
	Reopened bool
	// Swept: the idle sweeper ended this telemetry session, and its
	// telemetry other than a request runs it again (reopen.go).
	Swept   bool
	changed bool // by this batch: written back
	isNew   bool // started in this batch: insert
	// row is the row of a telemetry session that ended in this batch, its
	// requests' part filled at flush; touched, that its telemetry reported
	// something in this batch its row shows (a request, a billing, its end).
	row     *Call
	touched bool
	// reopens: how often a start or its telemetry reopened it in this
	// batch, reopenSignal its billing signal at the last; doorRow, the row
	// its door's end (or the sweeper's, a disconnect) writes over its
	// telemetry's; hadRow, that its row was in router_calls before this
	// batch.
	reopens      int
	reopenSignal string
	doorRow      *Call
	hadRow       bool
}

func (s *session) ended() bool { return s.EndedAt != nil }

func (s *session) telemetry() bool { return s.Origin == originTelemetry }

// followsLedger reports whether flush makes the session's row from its
// ledger: a telemetry session that ended (in this batch or before) and
// reported something in this batch; or one reopened in this batch whose
// telemetry did so before the reopen, unless its door's end came too.
func (s *session) followsLedger() bool {
	return s.touched && s.doorRow == nil && (s.telemetry() && s.ended() || s.reopens > 0)
}

// asOfReopen reports whether the session's row at flush is as of its last
// reopen in this batch: no end of its telemetry's came after it.
func (s *session) asOfReopen() bool { return s.reopens > 0 && !(s.telemetry() && s.ended()) }

// rowSignal is the billing signal the session's row takes from its
// telemetry: the last, or the last before the reopen the row is as of.
func (s *session) rowSignal() string {
	if s.asOfReopen() {
		return s.reopenSignal
	}
	return s.BillingSignal
}

// call starts the router-call row of the session, ending it.
func (s *session) call(status string, at time.Time) *Call {
	s.EndedAt, s.changed = &at, true
	return &Call{SessionID: s.ID, Org: s.Org, Member: s.Member, App: s.App, PlanID: s.PlanID, WorkerID: s.WorkerID,
		ExecutionSurface: ExecutionSurface(s.App), Status: status, StartedAt: s.StartedAt, At: at}
}

const sessionColumns = `session_id, org, member, app, plan_id, worker_id, started_at, ended_at, usage, total_cost::float8,
	origin, billing_signal, reopened, swept`

func scanSessions(rows pgx.Rows) ([]*session, error) {
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (*session, error) {
		var s session
		var usage []byte
		err := row.Scan(&s.ID, &s.Org, &s.Member, &s.App, &s.PlanID, &s.WorkerID, &s.StartedAt, &s.EndedAt, &usage,
			&s.TotalCost, &s.Origin, &s.BillingSignal, &s.Reopened, &s.Swept)
		s.hadRow = s.EndedAt != nil || s.Reopened // an ended session has its row; a reopened one keeps it
		if err == nil && usage != nil {
			s.Usage = &streams.Usage{}
			err = json.Unmarshal(usage, s.Usage)
		}
		return &s, err
	})
}

// loadSessions reads the sessions with the given ids: one primary-key probe
// per id (the LATERAL join), whatever the table's statistics say; with
// session_id = ANY($1) a never-analysed table (autovacuum may be off) was
// scanned whole per batch, 4.4 ms a batch at 49k sessions. The LIMIT 1
// keeps the LATERAL a subquery: without it PostgreSQL flattens it into a
// join, and once the table has statistics hashes the ids against a scan of
// every session (8.5 ms for 460 ids at 17,000 sessions; probes: 2.2 ms).
func loadSessions(ctx context.Context, tx pgx.Tx, ids []string) ([]*session, error) {
	rows, err := tx.Query(ctx, `SELECT a.* FROM unnest($1::text[]) AS u(id),
		LATERAL (SELECT `+sessionColumns+` FROM accounting_sessions WHERE session_id = u.id LIMIT 1) a`, execMode, ids)
	if err != nil {
		return nil, fmt.Errorf("load accounting sessions: %w", err)
	}
	return scanSessions(rows)
}

// liveOnWorker reads the sessions still running on a worker.
func liveOnWorker(ctx context.Context, tx pgx.Tx, worker string) ([]*session, error) {
	rows, err := tx.Query(ctx, `SELECT `+sessionColumns+` FROM accounting_sessions
		WHERE worker_id = $1 AND ended_at IS NULL ORDER BY session_id`, execMode, worker)
	if err != nil {
		return nil, fmt.Errorf("live sessions on worker %s: %w", worker, err)
	}
	return scanSessions(rows)
}
