package server

import (
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/spinehq/spine/spine/desktop"
)

// sseKeepAlive is how often an idle event stream sends a comment, so
// proxies keep it open and the runner notices a dead connection.
const sseKeepAlive = 15 * time.Second

// runnerEvents is GET /v1/desktop-runner/events: server-sent events that
// announce work the moment it is queued (event "work_available"), after a
// first "ready" event listing what is already waiting.
func (s *Server) runnerEvents(w http.ResponseWriter, r *http.Request, id desktop.RunnerIdentity) {
	flusher, ok := w.(http.Flusher)
	if !ok {
		writeError(w, http.StatusInternalServerError, CodeInternal, "streaming unsupported")
		return
	}
	ch, cancel := s.cfg.Desktop.WorkAnnouncements(id)
	defer cancel()
	waiting, err := s.cfg.Desktop.Work(r.Context(), id)
	if err != nil {
		s.desktopError(w, "list work", err)
		return
	}
	startSSE(w)
	ids := make([]string, len(waiting))
	for i, t := range waiting {
		ids[i] = t.ID
	}
	writeSSE(w, "ready", map[string]any{"runnerId": id.RunnerID, "queued": ids})
	flusher.Flush()
	tick := time.NewTicker(sseKeepAlive)
	defer tick.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case a, open := <-ch:
			if !open {
				return // spine is stopping
			}
			if !a.MayTake(id) {
				continue
			}
			writeSSE(w, "work_available", map[string]any{"taskId": a.TaskID, "kind": a.WorkKind, "sessionId": a.SessionID})
		case <-tick.C:
			fmt.Fprint(w, ": keepalive\n\n")
		}
		flusher.Flush()
	}
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
