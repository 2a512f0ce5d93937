package telemetry

import (
	"errors"
	"fmt"
)

// The ways a request body can be refused. Each is a caller's error (an
// HTTP 4xx at the door), never spine's.
var (
	// ErrContentType: the body is neither application/x-protobuf nor
	// application/json (HTTP 415).
	ErrContentType = errors.New("telemetry: content type is not application/x-protobuf or application/json")
	// ErrEncoding: a Content-Encoding other than gzip or identity (HTTP 415).
	ErrEncoding = errors.New("telemetry: content encoding is not gzip or identity")
	// ErrTooLarge: the body, decompressed, is over the limit (HTTP 413).
	ErrTooLarge = errors.New("telemetry: body too large")
	// ErrTooManyRecords: the export holds more than MaxRecords log records
	// or data points, or MaxValues values in all (HTTP 413).
	ErrTooManyRecords = fmt.Errorf("telemetry: an export holds at most %d log records or metric data points, and %d values in all",
		MaxRecords, MaxValues)
	// ErrNoRoom: ReadOpts.Reserve refused the next bytes (HTTP 429: the
	// in-flight budget is spent).
	ErrNoRoom = errors.New("telemetry: no room to read the body now")
	// ErrMalformed: the body does not decode as OTLP, or its gzip stream is
	// broken (HTTP 400). A *MalformedError wraps it.
	ErrMalformed = errors.New("telemetry: malformed body")
)

// MalformedError is a body that does not decode. Its message names the
// format only: the decoder's own message can quote the body, and a body
// holds what the app logged (prompt text, tool output), which spine never
// logs. Unwrap gives the decoder's error, for a test to read.
type MalformedError struct {
	// Layer is what failed to decode: "protobuf", "JSON" or "gzip".
	Layer string
	err   error
}

func (e *MalformedError) Error() string {
	return "telemetry: malformed " + e.Layer + " body"
}

// Is makes errors.Is(err, ErrMalformed) hold.
func (e *MalformedError) Is(target error) bool { return target == ErrMalformed }

// Unwrap is the decoder's error; its text may quote the body.
func (e *MalformedError) Unwrap() error { return e.err }

// What keeps an event from being recorded, each counted in the partial
// success of the request that carried it.
var (
	// ErrUnknownApp: the event's resource names no app spine records
	// (service.name is not claude-code or codex_*).
	ErrUnknownApp = errors.New("telemetry: service.name is no app spine records (claude-code, codex_*)")
	// ErrNoSession: the event names no session (session.id,
	// conversation.id, a hook's session_id).
	ErrNoSession = errors.New("telemetry: the event names no session")
)

// Why a hook's body is malformed, wrapped in a *MalformedError.
var (
	errInvalidUTF8 = errors.New("not valid UTF-8")
	errTrailing    = errors.New("data after the JSON object")
	errTooDeep     = errors.New("values nested too deep")
	errJSONSyntax  = errors.New("not JSON")
	errJSONEnd     = errors.New("the JSON ends early")
)
