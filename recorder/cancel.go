package recorder

import (
	"time"

	"github.com/spinehq/spine/streams"
)

// ControlCancel is the session.control that asks the producer to stop. The
// recorder notes when JetStream stored a session's first one; a session
// still running CancelGrace later is ended cancelled by the Sweeper.
const ControlCancel = "cancel"

// CancelControl is the session.control that cancels a session on its
// owner's behalf. Its id is derived from the session id, so a retried
// cancel is stored once.
func CancelControl(sessionID, reason string, at time.Time) *streams.Envelope {
	return &streams.Envelope{V: streams.Version, Type: streams.TypeSessionControl,
		ID: derivedID("cancel-", "spine.cancel", sessionID), At: at.UTC(), SessionID: sessionID,
		Control: ControlCancel, Reason: reason}
}
