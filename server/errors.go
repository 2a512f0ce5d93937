package server

import (
	"encoding/json"
	"net/http"
)

// Error codes in HTTP error bodies.
const (
	CodeUnauthorized = "unauthorized"
	CodeNotFound     = "not_found"
	CodeBadRequest   = "bad_request"
	CodeTooLarge     = "too_large"
	CodeForbidden    = "forbidden"
	// CodeAdminRequired: the caller may read the thing but changing it
	// takes an org admin's token (spine token mint --role admin).
	CodeAdminRequired = "admin_required"
	CodeInternal      = "internal"
	CodeUnavailable   = "unavailable"
)

// ErrorBody is every error response: {"error":{"code","message"}}.
type ErrorBody struct {
	Error ErrorDetail `json:"error"`
}

// ErrorDetail says what went wrong.
type ErrorDetail struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

func writeError(w http.ResponseWriter, status int, code, msg string) {
	writeJSON(w, status, ErrorBody{Error: ErrorDetail{Code: code, Message: msg}})
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
