package bench

import (
	"context"
	"fmt"
)

// OTLPCheck counts one phase's projections against what it sent: a
// session per app session, a step per tool_result, a ledger row per
// api_request, and no dead letter.
type OTLPCheck struct {
	Phase        string `json:"phase"`
	SessionsSent int    `json:"sessionsSent"`
	Sessions     int    `json:"sessions"` // sessions rows of the phase's app sessions
	ToolsSent    int    `json:"toolsSent"`
	Steps        int    `json:"steps"` // their recorded steps
	RequestsSent int    `json:"requestsSent"`
	Requests     int    `json:"requests"` // accounting's router_call_requests of them
}

// otlpVerifySQL counts a phase's sessions (by their app session ids'
// prefix), their recorded steps and their ledgered requests.
const otlpVerifySQL = `SELECT count(*), coalesce(sum(recorded_steps), 0),
	(SELECT count(*) FROM router_call_requests r WHERE r.session_id IN
		(SELECT id FROM sessions WHERE app_session_ref LIKE $1))
	FROM sessions WHERE app_session_ref LIKE $1`

// verify waits for every projector and counts each phase and the run's
// dead letters.
func (ob *otlpBed) verify(ctx context.Context) ([]OTLPCheck, int, error) {
	if err := ob.tb.node.WaitIdle(ctx, nil); err != nil {
		return nil, 0, fmt.Errorf("verify: %w", err)
	}
	var dead int
	if err := ob.tb.node.Pool.QueryRow(ctx, `SELECT count(*) FROM dead_letters`).Scan(&dead); err != nil {
		return nil, 0, fmt.Errorf("verify: %w", err)
	}
	tools := ob.cfg.Events / 2
	var out []OTLPCheck
	for _, phase := range ob.phases {
		c := OTLPCheck{Phase: phase, SessionsSent: ob.cfg.Sessions, ToolsSent: ob.cfg.Sessions * tools,
			RequestsSent: ob.cfg.Sessions * (ob.cfg.Events - tools)}
		w := &otlpWorkload{run: ob.run, phase: phase}
		prefix := w.sessionID(0)[:len(w.sessionID(0))-5] + "%"
		if err := ob.tb.node.Pool.QueryRow(ctx, otlpVerifySQL, prefix).Scan(&c.Sessions, &c.Steps, &c.Requests); err != nil {
			return nil, 0, fmt.Errorf("verify %s: %w", phase, err)
		}
		out = append(out, c)
	}
	return out, dead, nil
}

// otlpVerified reports whether every phase's counts match and the log
// has no dead letter.
func otlpVerified(checks []OTLPCheck) bool {
	for _, c := range checks {
		if c.Sessions != c.SessionsSent || c.Steps != c.ToolsSent || c.Requests != c.RequestsSent {
			return false
		}
	}
	return len(checks) > 0
}
