package server

import (
	"context"
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
// time a session of the caller's scope starts, ends or changes what the
// list shows of it.
func (s *Server) sessionsEvents(w http.ResponseWriter, r *http.Request) {
	who := scope(r)
	mark, err := views.SessionsMark(r.Context(), s.cfg.Pool, who)
	if err != nil {
		s.internal(w, "watch sessions", err)
		return
	}
	s.stream(w, r, pageStream{what: "sessions events", ready: sse{"ready", map[string]any{}}, every: sessionsPoll,
		poll: func(ctx context.Context) (sse, bool, error) {
			now, err := views.SessionsMark(ctx, s.cfg.Pool, who)
			if err != nil || now == mark {
				return sse{}, false, err
			}
			mark = now
			return sse{"change", map[string]any{}}, false, nil
		}})
}
