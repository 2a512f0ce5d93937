package server

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/spinehq/spine/telemetry"
)

// HookDeadline bounds all a hook's request does before it is answered:
// Claude Code waits on its hooks (SessionEnd's get 1.5 s in all), so the
// door answers within this whatever the database and the log do.
const HookDeadline = time.Second

// claudeCodeHook records one of Claude Code's http hooks (docs/telemetry.md)
// and answers 200 {} (a hook's 2xx body is its output to the app: an empty
// object changes nothing). A hook spine records nothing of, or cannot
// place (no session, an ingest token's hook of a session no member of
// the org holds), is answered the same: the app is never blocked on it.
// When the log or the database cannot take it within HookDeadline the
// answer is 503 with Retry-After, which Claude Code treats as a
// non-blocking error.
func (s *Server) claudeCodeHook(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), HookDeadline)
	defer cancel()
	if enc := r.Header.Get("Content-Encoding"); enc != "" && !strings.EqualFold(enc, "identity") {
		// Claude Code never compresses a hook: a compressed one would
		// only grow past what the body limiter counted.
		writeError(w, http.StatusUnsupportedMediaType, CodeUnsupportedMedia, "a hook's body is sent uncompressed (no Content-Encoding)")
		return
	}
	body, err := telemetry.ReadBody(r.Body, "", &telemetry.ReadOpts{Max: telemetry.MaxHookBytes})
	switch {
	case errors.Is(err, ErrBusy), errors.Is(err, ErrBodyTooSlow):
		return // the body limiter answered
	case errors.Is(err, telemetry.ErrTooLarge):
		writeError(w, http.StatusRequestEntityTooLarge, CodeTooLarge, "a hook's body is at most 4 MiB")
		return
	case err != nil:
		writeError(w, http.StatusBadRequest, CodeBadRequest, "body unreadable: "+err.Error())
		return
	}
	h, err := telemetry.DecodeHook(body)
	if err != nil {
		writeError(w, http.StatusBadRequest, CodeBadRequest, err.Error())
		return
	}
	res := &telemetryResult{door: "hook", events: 1}
	err = s.recordHook(ctx, r, h, res)
	s.count(res)
	if err != nil {
		w.Header().Set("Retry-After", "1")
		writeError(w, http.StatusServiceUnavailable, CodeUnavailable, "spine could not record the hook now")
		return
	}
	writeJSON(w, http.StatusOK, struct{}{})
}

// recordHook records h as the caller, under ctx's deadline.
func (s *Server) recordHook(ctx context.Context, r *http.Request, h *telemetry.Hook, res *telemetryResult) error {
	env, err := h.Envelope(time.Now())
	switch {
	case err != nil:
		res.refuse(refusedNoSession)
		return nil
	case env == nil:
		res.ignored++
		return nil
	}
	return s.record(ctx, caller(r), []*telemetryEvent{{env: env}}, res)
}
