package server

import (
	"errors"
	"net/http"
	"time"

	"github.com/spinehq/spine/recorder"
	"github.com/spinehq/spine/views"
)

// How a recorded session's page follows it: its events poll the session's
// row (views.ReadProgress: two primary-key probes) every sessionPoll, one
// poll per open page. After the end they wait up to callWait for the
// router-call row, which accounting writes apart from the recorder.
const (
	sessionPoll = time.Second
	callWait    = 30 * time.Second
)

// sessionEvents tells an open session page what changed: "ready" once,
// "change" each time the recording moved (a chunk, an observation, a
// hole, the end, the router call), and "end" once the session has ended
// and its router call is in (or callWait has passed); then the stream
// ends. Another member's session is the 404 page a missing one is.
func (s *Server) sessionEvents(w http.ResponseWriter, r *http.Request) {
	v, ok := s.sessionView(w, r)
	if !ok {
		return
	}
	flusher, ok := w.(http.Flusher)
	if !ok {
		writePageError(w, http.StatusInternalServerError, "streaming unsupported")
		return
	}
	last, err := views.ReadProgress(r.Context(), s.cfg.Pool, v.ID)
	if err != nil {
		s.pageFailed(w, "session events", err)
		return
	}
	startSSE(w)
	writeSSE(w, "ready", map[string]any{"status": v.Status, "lastSeq": last.LastSeq})
	flusher.Flush()
	s.followSession(w, r, flusher, v.ID, last)
}

func (s *Server) followSession(w http.ResponseWriter, r *http.Request, flusher http.Flusher, id string, last views.Progress) {
	poll := time.NewTicker(sessionPoll)
	defer poll.Stop()
	keep := time.NewTicker(sseKeepAlive)
	defer keep.Stop()
	var endedAt time.Time
	for {
		if last.Ended && endedAt.IsZero() {
			endedAt = time.Now()
		}
		if last.Ended && (last.Called || time.Since(endedAt) >= callWait) {
			writeSSE(w, "end", map[string]any{"sessionId": id})
			flusher.Flush()
			return
		}
		select {
		case <-r.Context().Done():
			return
		case <-keep.C:
			_, _ = w.Write([]byte(": keepalive\n\n"))
		case <-poll.C:
			now, err := views.ReadProgress(r.Context(), s.cfg.Pool, id)
			if errors.Is(err, recorder.ErrNotFound) || (err == nil && now.Same(last)) {
				continue
			}
			if err != nil {
				s.log.Warn("session events poll failed", "err", err)
				continue
			}
			last = now
			writeSSE(w, "change", map[string]any{"sessionId": id, "lastSeq": now.LastSeq})
		}
		flusher.Flush()
	}
}
