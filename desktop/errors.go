package desktop

import "errors"

// Errors the service returns; the HTTP and MCP layers map each to one code.
var (
	// ErrUnknownSession: no such remote session, or another member's (one answer).
	ErrUnknownSession = errors.New("unknown_session")
	// ErrUnknownTask: no such task for this runner, or another member's.
	ErrUnknownTask = errors.New("unknown_task")
	// ErrUnknownRunner: a pinned runnerId that is not one of the member's runners.
	ErrUnknownRunner = errors.New("unknown_runner")
	// ErrAlreadyClaimed: another runner won the claim (or the task is no longer queued).
	ErrAlreadyClaimed = errors.New("already_claimed")
	// ErrStaleClaim: a heartbeat, events or completion from a claim that no longer holds the task.
	ErrStaleClaim = errors.New("stale_claim")
	// ErrNotClaimable: this runner may not take the task (another machine's,
	// a work kind it did not declare, or past its deliverBy); also register
	// with a runnerId another member's runner uses.
	ErrNotClaimable = errors.New("not_claimable")
	// ErrNotRegistered: the runner must register before it polls or claims.
	ErrNotRegistered = errors.New("runner_not_registered")
	// ErrConflict: a message published with an expected sequence lost to
	// another write on the task's subjects; the service re-reads and retries.
	ErrConflict = errors.New("conflict")
	// ErrTokenRevoked: a runner token its member revoked (or never minted here).
	ErrTokenRevoked = errors.New("runner token revoked")
	// ErrRunnerTaken: minting a token for a runnerId another member owns.
	ErrRunnerTaken = errors.New("runner_taken")
	// ErrTooLarge: a write whose message would not fit in the log (4 MiB).
	ErrTooLarge = errors.New("message too large")
	// ErrSessionLinked: a session a runner records is already linked to
	// another task (a session serves one task).
	ErrSessionLinked = errors.New("session_linked")
	// ErrBusy: the log did not take a write in time; the caller may retry.
	ErrBusy = errors.New("busy")
)

// NeedsRunnerError is create's actionable answer when no runner of the
// member is present and no deliverBy was given: the human step to take.
type NeedsRunnerError struct {
	Machine string // the member's most recently seen machine, or ""
	Action  string // "start `spine runner` on <machine>", or what else to do
}

func (e *NeedsRunnerError) Error() string { return "needs_desktop_runner: " + e.Action }

// InvalidError is a request that breaks a rule; Msg says what to fix.
type InvalidError struct{ Msg string }

func (e *InvalidError) Error() string { return e.Msg }

func invalid(msg string) error { return &InvalidError{Msg: msg} }
