package server

import (
	"encoding/json"
	"errors"
	"net/http"

	"github.com/spinehq/spine/streams"
)

// Error codes in HTTP error bodies.
const (
	CodeUnauthorized = "unauthorized"
	CodeNotFound     = "not_found"
	CodeBadRequest   = "bad_request"
	CodeTooLarge     = "too_large"
	// CodeUnsupportedMedia (415): a Content-Type or Content-Encoding the
	// route does not take.
	CodeUnsupportedMedia = "unsupported_media_type"
	CodeForbidden        = "forbidden"
	// CodeAdminRequired: the caller may read the thing but changing it
	// takes an org admin's token (spine token mint --role admin).
	CodeAdminRequired = "admin_required"
	CodeInternal      = "internal"
	CodeUnavailable   = "unavailable"
	// CodeSessionEnded: the session has ended; it can no longer be cancelled.
	CodeSessionEnded = "session_ended"
	// CodeBodyTooSlow (408): the body fell below the minimum rate; the
	// connection is closed.
	CodeBodyTooSlow = "body_too_slow"
	// CodeBusy (429, Retry-After): the in-flight byte budget is spent.
	CodeBusy = "busy"
	// CodeQuotaExceeded (429, Retry-After): the caller's org is over its
	// ingest quota.
	CodeQuotaExceeded = "quota_exceeded"
	// CodeTooManyStreams (429, Retry-After): the caller (or everyone) has
	// as many pages following their changes open as spine allows.
	CodeTooManyStreams = "too_many_streams"
)

// Errors a limited request body's Read returns once it is cut.
var (
	ErrBodyTooSlow = errors.New("request body below the minimum rate")
	ErrBusy        = errors.New("in-flight byte budget spent")
)

// ErrorBody is every error response: {"error":{"code","message"}}.
type ErrorBody struct {
	Error streams.ErrorDetail `json:"error"`
}

func writeError(w http.ResponseWriter, status int, code, msg string) {
	writeJSON(w, status, ErrorBody{Error: streams.ErrorDetail{Code: code, Message: msg}})
}

// notFound is the one answer for a missing row and for another member's:
// the bytes are identical, so a caller learns nothing from them.
func notFound(w http.ResponseWriter, what string) {
	writeError(w, http.StatusNotFound, CodeNotFound, what+" not found")
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	_ = enc.Encode(v)
}
