package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/spinehq/spine/desktop"
	"github.com/spinehq/spine/streams"
)

// sseKeepAlive is how often an idle session page stream sends a comment, so
// proxies keep it open. Runner streams use the desktop service's figure.
const sseKeepAlive = 15 * time.Second

// runnerEvents is GET /v1/desktop-runner/events: server-sent events that
// announce work the moment it is queued (event "work_available"), after a
// first "ready" event listing what is already waiting. Every keepalive the
// token is checked again and the runner marked present; a revoked or
// expired token gets a last "unauthorized" event and the stream ends.
func (s *Server) runnerEvents(w http.ResponseWriter, r *http.Request, id desktop.RunnerIdentity) {
	flusher, ok := w.(http.Flusher)
	if !ok {
		writeError(w, http.StatusInternalServerError, CodeInternal, "streaming unsupported")
		return
	}
	ws, err := s.cfg.Desktop.OpenWorkStream(r.Context(), id)
	if err != nil {
		s.desktopError(w, "list work", err)
		return
	}
	defer ws.Close()
	startSSE(w)
	ids := make([]string, len(ws.Queued))
	for i, t := range ws.Queued {
		ids[i] = t.ID
	}
	writeSSE(w, "ready", map[string]any{"runnerId": id.RunnerID, "queued": ids})
	flusher.Flush()
	tick := time.NewTicker(ws.KeepAlive())
	defer tick.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case a, open := <-ws.Announcements():
			if !open {
				return // spine is stopping
			}
			take, err := ws.Wants(r.Context(), a)
			if s.endStream(w, err) {
				return
			}
			if !take && err == nil {
				continue
			}
			// A failed inventory read forwards the announcement: the claim decides.
			writeSSE(w, "work_available", map[string]any{"taskId": a.TaskID, "kind": a.WorkKind, "sessionId": a.SessionID})
		case <-tick.C:
			if s.endStream(w, ws.Tick(r.Context())) {
				return
			}
			fmt.Fprint(w, ": keepalive\n\n")
		}
		flusher.Flush()
	}
}

// endStream reports whether err ends a runner's event stream (its token is
// revoked or expired), after telling the runner why. Other errors are
// logged; the stream goes on.
func (s *Server) endStream(w http.ResponseWriter, err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, desktop.ErrTokenRevoked) || isAuthError(err) {
		writeSSE(w, "unauthorized", streams.ErrorDetail{Code: CodeUnauthorized,
			Message: "invalid runner token: " + err.Error() + "; mint a new one as the member"})
		if f, ok := w.(http.Flusher); ok {
			f.Flush()
		}
		return true
	}
	s.log.Warn("runner event stream check failed", "err", err)
	return false
}

func startSSE(w http.ResponseWriter) {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
}

func writeSSE(w http.ResponseWriter, event string, v any) {
	data, _ := json.Marshal(v)
	fmt.Fprintf(w, "event: %s\ndata: %s\n\n", event, data)
}
