package views

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/spinehq/spine/streams"
)

// SessionsPageSize is how many sessions a page of the sessions page lists.
const SessionsPageSize = 50

// MaxRunningCount bounds the count of running sessions a page reads: a
// page says "more than" past it rather than count without end.
const MaxRunningCount = 1000

// StatusRunning filters the sessions that have not ended.
const StatusRunning = "running"

// SessionFilter narrows a page of sessions; a zero field filters nothing.
// Every filter is within the owner the read is scoped to: Member narrows an
// admin's org to one member, and can never widen a member's own list.
type SessionFilter struct {
	App     string    // claude-code or codex
	Machine string    // the start's workerId
	Member  string    // one member of the owner's org
	Status  string    // StatusRunning, or an end status (done, failed…)
	Billing string    // the router-call row's class: a session without one has none
	Day     time.Time // sessions started on this UTC date (zero: any day)
	Plan    string    // the start's planId
}

// SessionRow is one session as the sessions page lists it.
type SessionRow struct {
	ID      string `json:"id"`
	Member  string `json:"member"`
	App     string `json:"app"`
	Kind    string `json:"kind"`
	Machine string `json:"machine"` // the start's workerId; "" = none named
	Status  string `json:"status"`  // running, or how it ended
	Model   string `json:"model"`   // as the app reported it; "" = not reported
	// Billing is the class of the session's router-call row, "" while it
	// has none: a running session, or one whose end accounting has not
	// projected yet.
	Billing   string     `json:"billing"`
	PlanID    string     `json:"planId"`
	Steps     int        `json:"steps"` // recordedSteps
	StartedAt time.Time  `json:"startedAt"`
	EndedAt   *time.Time `json:"endedAt"` // nil while it runs
}

// SessionsPage is one page of sessions, newest first.
type SessionsPage struct {
	Sessions []SessionRow
	// Running counts the sessions the filter selects that have not ended,
	// on every page; past MaxRunningCount it is MaxRunningCount+1.
	Running int
	// Older is the cursor of the next (older) page; nil on the last.
	Older *SessionCursor
}

// Sessions reads the owner's sessions that the filter selects, newest
// first (started_at, then id), limit of them from before (nil: the
// newest), with the count of those running, in one query. It walks one
// index's range (migration 016) from the cursor; the filters the index
// does not hold are checked on the way, so a filter matching few sessions
// reads further, still never past limit rows returned.
func Sessions(ctx context.Context, q streams.Querier, owner streams.Owner, f SessionFilter, before *SessionCursor, limit int) (*SessionsPage, error) {
	w := sessionsWhere(owner, f)
	page := w.and("")
	if before != nil {
		page = w.and(fmt.Sprintf(`(s.started_at, s.id COLLATE "C") < ($%d, $%d)`, w.arg(before.StartedAt), w.arg(before.ID)))
	}
	sql := `SELECT (` + runningCount(w) + `), coalesce((SELECT json_agg(p ORDER BY p."startedAt" DESC, p.id COLLATE "C" DESC)
		FROM (SELECT s.id, s.member, s.app, s.kind, s.worker_id AS machine, s.status, s.model,
			coalesce(rc.billing, '') AS billing, s.plan_id AS "planId", s.recorded_steps AS steps,
			s.started_at AS "startedAt", s.ended_at AS "endedAt"
		` + sessionsFrom + ` WHERE ` + page + `
		ORDER BY s.started_at DESC, s.id COLLATE "C" DESC LIMIT ` + fmt.Sprintf("$%d", w.arg(limit+1)) + `) p), '[]')`
	var out SessionsPage
	var rows []byte
	if err := q.QueryRow(ctx, sql, w.args...).Scan(&out.Running, &rows); err != nil {
		return nil, fmt.Errorf("read sessions page: %w", err)
	}
	if err := json.Unmarshal(rows, &out.Sessions); err != nil {
		return nil, fmt.Errorf("read sessions page: %w", err)
	}
	if len(out.Sessions) > limit {
		out.Sessions = out.Sessions[:limit]
		last := out.Sessions[limit-1]
		out.Older = &SessionCursor{StartedAt: last.StartedAt, ID: last.ID}
	}
	return &out, nil
}

// RunningSessions counts the owner's sessions that the filter selects and
// that have not ended (at most MaxRunningCount+1): the page's count alone.
func RunningSessions(ctx context.Context, q streams.Querier, owner streams.Owner, f SessionFilter) (int, error) {
	w := sessionsWhere(owner, f)
	var n int
	if err := q.QueryRow(ctx, runningCount(w), w.args...).Scan(&n); err != nil {
		return 0, fmt.Errorf("count running sessions: %w", err)
	}
	return n, nil
}

// sessionsFrom joins each session to its router-call row (one primary-key
// probe each); the join is dropped by the planner where nothing reads it.
const sessionsFrom = `FROM sessions s LEFT JOIN router_calls rc ON rc.session_id = s.id AND rc.org = s.org`

// runningCount is the query counting w's running sessions, bounded: from
// the index of running sessions alone (sessions_running).
func runningCount(w *where) string {
	return `SELECT count(*) FROM (SELECT 1 ` + sessionsFrom + ` WHERE ` + w.and("s.ended_at IS NULL") +
		fmt.Sprintf(` LIMIT %d) running`, MaxRunningCount+1)
}

// sessionsWhere is the condition on sessions s (and router_calls rc) of
// the owner's sessions that f selects.
func sessionsWhere(owner streams.Owner, f SessionFilter) *where {
	w := &where{}
	w.eq("s.org", owner.Org)
	for _, c := range []struct{ col, v string }{{"s.member", owner.Member}, {"s.member", f.Member},
		{"s.app", f.App}, {"s.worker_id", f.Machine}, {"s.plan_id", f.Plan}, {"rc.billing", f.Billing}} {
		if c.v != "" {
			w.eq(c.col, c.v)
		}
	}
	switch f.Status {
	case "":
	case StatusRunning:
		w.conds = append(w.conds, "s.ended_at IS NULL")
	default:
		w.eq("s.status", f.Status)
		w.conds = append(w.conds, "s.ended_at IS NOT NULL")
	}
	if !f.Day.IsZero() {
		day := time.Date(f.Day.Year(), f.Day.Month(), f.Day.Day(), 0, 0, 0, 0, time.UTC)
		w.conds = append(w.conds, fmt.Sprintf("s.started_at >= $%d AND s.started_at < $%d",
			w.arg(day), w.arg(day.AddDate(0, 0, 1))))
	}
	return w
}

// where is a condition built of parts, with its arguments.
type where struct {
	conds []string
	args  []any
}

// arg adds an argument and returns its number ($n).
func (w *where) arg(v any) int {
	w.args = append(w.args, v)
	return len(w.args)
}

func (w *where) eq(col string, v any) {
	w.conds = append(w.conds, fmt.Sprintf("%s = $%d", col, w.arg(v)))
}

// and is the condition with one more part ("" = none), leaving w as it was.
func (w *where) and(extra string) string {
	conds := w.conds
	if extra != "" {
		conds = append(conds[:len(conds):len(conds)], extra)
	}
	return strings.Join(conds, " AND ")
}
