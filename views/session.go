package views

import (
	"context"
	"fmt"

	"github.com/spinehq/spine/accounting"
	"github.com/spinehq/spine/desktop"
	"github.com/spinehq/spine/recorder"
	"github.com/spinehq/spine/streams"
)

// Session is a recorded session as its page shows it: the recorder's row,
// its router call, and the remote session its task belongs to.
type Session struct {
	*recorder.Session
	// Call is the router-call row, nil until accounting has recorded the
	// session's end.
	Call *accounting.Call
	// RemoteSessionID is the remote session of the session's task ("" when
	// it ran for none, or its owner has no such task).
	RemoteSessionID string
}

// ReadSession reads a session in scope (recorder.GetSessionIn: the
// caller's own, or the org's for an admin's scope, Member "") with its
// router call and its task's remote session; recorder.ErrNotFound when it
// is missing or outside the scope (one answer). The call and the task are
// read as the session's owner's, whoever the scope is.
func ReadSession(ctx context.Context, q streams.Querier, scope streams.Owner, id string) (*Session, error) {
	s, err := recorder.GetSessionIn(ctx, q, scope, id)
	if err != nil {
		return nil, err
	}
	v := &Session{Session: s}
	owner := streams.Owner{Org: s.Org, Member: s.Member}
	calls, err := accounting.CallsOf(ctx, q, owner, []string{id})
	if err != nil {
		return nil, fmt.Errorf("session page %s: %w", id, err)
	}
	v.Call = calls[id]
	if v.RemoteSessionID, err = desktop.RemoteSessionOfTask(ctx, q, owner, s.TaskID); err != nil {
		return nil, fmt.Errorf("session page %s: %w", id, err)
	}
	return v, nil
}
