package server

import (
	"net/http"
	"time"

	"github.com/spinehq/spine/views"
)

// sessionsPoll is how often an open sessions page's event stream looks at
// the caller's sessions: the recorder announces nothing, so the stream
// polls one bounded digest (views.SessionsMark) and says "change" when it
// moves.
const sessionsPoll = time.Second

// sessionsEvents is GET /ui/sessions/events: "ready", then "change" each
// time a session of the caller's scope starts, ends or gets new content.
func (s *Server) sessionsEvents(w http.ResponseWriter, r *http.Request) {
	flusher, ok := w.(http.Flusher)
	if !ok {
		writeError(w, http.StatusInternalServerError, CodeInternal, "streaming unsupported")
		return
	}
	mark, err := views.SessionsMark(r.Context(), s.cfg.Pool, scope(r))
	if err != nil {
		s.internal(w, "watch sessions", err)
		return
	}
	startSSE(w)
	writeSSE(w, "ready", map[string]any{})
	flusher.Flush()
	keepalive := time.NewTicker(sseKeepAlive)
	defer keepalive.Stop()
	poll := time.NewTicker(sessionsPoll)
	defer poll.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-poll.C:
			now, err := views.SessionsMark(r.Context(), s.cfg.Pool, scope(r))
			if err != nil {
				if r.Context().Err() == nil {
					s.log.Warn("watch sessions failed", "err", err)
				}
				continue
			}
			if now == mark {
				continue
			}
			mark = now
			writeSSE(w, "change", map[string]any{})
		case <-keepalive.C:
			_, _ = w.Write([]byte(": keepalive\n\n"))
		}
		flusher.Flush()
	}
}
