package streams

import (
	"context"
	"errors"
	"io"
	"net"
	"syscall"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// A projector retries a failing batch without end only when the failure is
// the connection's or the server's: the same message will apply once the
// database is back. Any other failure may be the message itself, so the
// projector applies the batch one message at a time and dead-letters the
// one that keeps failing alone (see isolate.go).
//
// transientStates lists the SQLSTATEs (five characters) and classes (two)
// that are retried without end, each with why. Besides the connection and
// availability failures, it holds the errors that every message would hit
// alike (a missing table, a missing grant, a read-only standby, a corrupt
// index): isolating there would dead-letter the whole stream, one message
// at a time, while retrying shows the projector stuck in /readyz until an
// operator fixes the database.
//
// Classes 53 and XX are listed code by code: 53400 (configuration_limit_
// exceeded, as temp_file_limit, which one huge message's statement can
// pass) and XX000 (internal_error, a server bug that one value can trip)
// can be one message's, and retrying them would block the stream behind
// it for ever.
var transientStates = map[string]string{
	"08":    "connection_exception",                // the connection failed or was refused
	"53100": "disk_full",                           // the server recovers once space is freed
	"53200": "out_of_memory",                       // likewise, once memory is
	"53300": "too_many_connections",                // likewise, once connections close
	"57P01": "admin_shutdown",                      // the server is restarting or the backend was terminated
	"57P02": "crash_shutdown",                      // another backend crashed and the server is resetting
	"57P03": "cannot_connect_now",                  // the server is starting up or in recovery
	"57P05": "idle_session_timeout",                // the server closed an idle connection
	"57014": "query_canceled",                      // statement_timeout or pg_cancel_backend: a lock or an operator, not the message
	"25P03": "idle_in_transaction_timeout",         // the server ended the transaction's session
	"25006": "read_only_sql_transaction",           // connected to a standby after a failover
	"40001": "serialization_failure",               // a concurrent transaction won; the next try succeeds
	"40P01": "deadlock_detected",                   // likewise
	"40003": "statement_completion_unknown",        // the connection broke during commit
	"55P03": "lock_not_available",                  // lock_timeout: another session holds a lock
	"58":    "system_error",                        // an I/O error on the server
	"72000": "snapshot_too_old",                    // old_snapshot_threshold
	"XX001": "data_corrupted",                      // corruption: the database's fault, not the message's
	"XX002": "index_corrupted",                     // likewise
	"3D000": "invalid_catalog_name",                // the database is gone
	"3F000": "invalid_schema_name",                 // the schema is behind the code
	"42P01": "undefined_table",                     // a migration is missing
	"42703": "undefined_column",                    // likewise
	"42883": "undefined_function",                  // likewise
	"42501": "insufficient_privilege",              // a grant is missing
	"28":    "invalid_authorization_specification", // the role or its password changed
}

// transientError marks an error a retry can cure.
type transientError struct{ err error }

func (e transientError) Error() string { return e.err.Error() }
func (e transientError) Unwrap() error { return e.err }

// Transient marks err as one a retry can cure (a dependency that is down,
// a timeout), so the projector retries the batch without end instead of
// isolating and dead-lettering a message. Handlers use it for failures of
// anything but PostgreSQL; PostgreSQL's own are classified by SQLSTATE.
func Transient(err error) error {
	if err == nil {
		return nil
	}
	return transientError{err}
}

// IsTransient reports whether err is a failure of the connection or of the
// server's availability, which a projector retries without end, rather
// than one the message may have caused.
func IsTransient(err error) bool {
	if err == nil {
		return false
	}
	if _, ok := errors.AsType[transientError](err); ok {
		return true
	}
	if pgErr, ok := errors.AsType[*pgconn.PgError](err); ok {
		_, ok := transientState(pgErr.Code)
		return ok
	}
	return isConnectionError(err)
}

// isConnectionError: the error came from the connection, not the server.
func isConnectionError(err error) bool {
	if _, ok := errors.AsType[net.Error](err); ok {
		return true
	}
	if _, ok := errors.AsType[*pgconn.ConnectError](err); ok {
		return true
	}
	for _, target := range []error{context.DeadlineExceeded, context.Canceled, io.EOF, io.ErrUnexpectedEOF,
		pgconn.ErrConnClosed, pgx.ErrTxClosed, syscall.ECONNRESET, syscall.ECONNREFUSED, syscall.EPIPE} {
		if errors.Is(err, target) {
			return true
		}
	}
	return pgconn.SafeToRetry(err) || pgconn.Timeout(err)
}

func transientState(code string) (string, bool) {
	if name, ok := transientStates[code]; ok {
		return name, true
	}
	if len(code) == 5 {
		name, ok := transientStates[code[:2]]
		return name, ok
	}
	return "", false
}

// failureKind names a failure without its text, which may quote the data:
// the SQLSTATE (and its name when the table knows it) or the kind of
// error. Two failures of one message with the same kind failed "the same
// way"; it is also what /readyz shows.
func failureKind(err error) string {
	if pgErr, ok := errors.AsType[*pgconn.PgError](err); ok {
		if name, ok := transientState(pgErr.Code); ok {
			return "SQLSTATE " + pgErr.Code + " " + name
		}
		return "SQLSTATE " + pgErr.Code
	}
	switch {
	case errors.Is(err, context.DeadlineExceeded) || pgconn.Timeout(err):
		return "timeout"
	case errors.Is(err, errLostConnection) || isConnectionError(err):
		return "connection lost"
	case IsTransient(err):
		return "transient handler error"
	}
	return "handler error"
}
