package streams

import (
	"errors"
	"fmt"
)

// Dead-letter reasons. They are metric label values, so the set is closed.
const (
	ReasonMalformed       = "malformed_json"
	ReasonInvalidUTF8     = "invalid_utf8"
	ReasonTooLarge        = "too_large"
	ReasonFieldTooLong    = "field_too_long"
	ReasonWrongType       = "wrong_field_type"
	ReasonUnknownVersion  = "unknown_version"
	ReasonUnknownType     = "unknown_type"
	ReasonMissingField    = "missing_field"
	ReasonInvalidField    = "invalid_field"
	ReasonInvalidID       = "invalid_id"
	ReasonUnknownApp      = "unknown_app"
	ReasonEmbeddingsLevel = "embeddings_refused"
	ReasonUnknownAction   = "unknown_action"
	ReasonSubject         = "subject_mismatch"
	ReasonUnknownSession  = "unknown_session"
	ReasonSessionEnded    = "session_ended"
	// ReasonOutOfOrder: a chunk whose seq fell in a hole of its session (it
	// came after chunks past it) and is not recorded; a repeat of a seq
	// recorded is a duplicate, dropped silently.
	ReasonOutOfOrder     = "out_of_order"
	ReasonDuplicateStart = "duplicate_start"
	// ReasonSessionExists: a session.telemetry for a session id another
	// owner holds (a start's is duplicate_start).
	ReasonSessionExists = "session_exists"
	ReasonOwnerMismatch = "owner_mismatch"
	// ReasonUnstorable: PostgreSQL refused the message's rows (whatever
	// the SQLSTATE) every time it was applied alone; the detail holds the
	// SQLSTATE and the database's message.
	ReasonUnstorable = "unstorable"
	// ReasonHandlerError: the handler failed on the message with an error
	// of its own (not PostgreSQL's, not transient), or returned a
	// per-message result that is not a *Rejection.
	ReasonHandlerError = "handler_error"
)

// ErrRejected matches every *Rejection with errors.Is.
var ErrRejected = errors.New("envelope rejected")

// ErrInvalidID is returned when an id is not a subject-safe token.
var ErrInvalidID = errors.New("invalid id")

// ErrNotFound: no dead letter by that stream and sequence in the reader's
// scope (another member's is not found either).
var ErrNotFound = errors.New("not found")

// ErrBadCursor: a page cursor that is not one this package wrote.
var ErrBadCursor = errors.New("bad cursor")

// ErrListenWithoutToken is returned by StartEmbedded for a client listener
// without a token: anyone who can reach the port could publish as anyone.
var ErrListenWithoutToken = errors.New("embedded nats: a client listener needs a token")

// ErrStopped is returned by Wait when the projector was stopped by a test hook.
var ErrStopped = errors.New("projector stopped")

// ErrForeignLog: the database's checkpoint is past the end of the stream,
// so its projections were made from another log (another data directory
// or NATS). Projecting would silently skip everything up to the checkpoint.
var ErrForeignLog = errors.New("database was projected from another log")

// ErrNotLeader ends a NoStandby projector that found another instance leading.
var ErrNotLeader = errors.New("another instance leads this projector")

// ErrHandlerPanic wraps a panic of a Handler, which the projector treats as
// the handler's error (isolating the message that keeps causing it).
var ErrHandlerPanic = errors.New("handler panicked")

// ErrCannotAdvance matches every *StuckError with errors.Is: a projector
// that stopped, or keeps failing on the same messages.
var ErrCannotAdvance = errors.New("projector cannot advance")

// Rejection is a message that breaks a rule. It is dead-lettered with its
// reason and never retried: the same bytes would break the same rule.
type Rejection struct {
	Reason string // one of the Reason* constants
	Detail string // human-readable, never contains prompt or content
	// Owner, set by a handler that knows whose session the message was
	// for, is who may read the dead letter when no verified caller sent it
	// (see DeadLetterOwner). Zero: not known.
	Owner Owner
}

// Reject builds a *Rejection.
func Reject(reason, format string, args ...any) *Rejection {
	return &Rejection{Reason: reason, Detail: fmt.Sprintf(format, args...)}
}

func (r *Rejection) Error() string { return r.Reason + ": " + r.Detail }

// Is makes errors.Is(err, ErrRejected) true.
func (r *Rejection) Is(target error) bool { return target == ErrRejected }

// AsRejection returns the rejection inside err, if any.
func AsRejection(err error) (*Rejection, bool) {
	var r *Rejection
	ok := errors.As(err, &r)
	return r, ok
}
