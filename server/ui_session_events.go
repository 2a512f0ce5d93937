package server

import (
	"context"
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
// hole, the end, the router call), naming the parts of the page that
// moved (views.Progress.Parts), and "end" once the session has ended and its router call is in (or
// callWait has passed); then the stream ends. Another member's session is
// the 404 page a missing one is.
func (s *Server) sessionEvents(w http.ResponseWriter, r *http.Request) {
	v, ok := s.sessionView(w, r)
	if !ok {
		return
	}
	last, err := views.ReadProgress(r.Context(), s.cfg.Pool, v.ID)
	if err != nil {
		s.pageFailed(w, "session events", err)
		return
	}
	s.stream(w, r, pageStream{what: "session events", every: sessionPoll,
		ready: sse{"ready", map[string]any{"status": v.Status, "lastSeq": last.LastSeq}},
		poll:  s.followSession(v.ID, last)})
}

// followSession is the session stream's poll: the parts that moved since
// last, and the end.
func (s *Server) followSession(id string, last views.Progress) func(context.Context) (sse, bool, error) {
	var endedAt time.Time
	return func(ctx context.Context) (sse, bool, error) {
		now, err := views.ReadProgress(ctx, s.cfg.Pool, id)
		if errors.Is(err, recorder.ErrNotFound) {
			return sse{}, false, nil
		}
		if err != nil {
			return sse{}, false, err
		}
		parts := now.Parts(last)
		last = now
		if now.Ended && endedAt.IsZero() {
			endedAt = time.Now()
		}
		if now.Ended && (now.Called || time.Since(endedAt) >= callWait) {
			return sse{"end", map[string]any{"sessionId": id}}, true, nil
		}
		if len(parts) == 0 {
			return sse{}, false, nil
		}
		return sse{"change", map[string]any{"sessionId": id, "lastSeq": now.LastSeq, "parts": parts}}, false, nil
	}
}
