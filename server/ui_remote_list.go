package server

import (
	"context"
	"net/http"
	"net/url"
	"slices"
	"time"

	"github.com/spinehq/spine/desktop"
	"github.com/spinehq/spine/server/pages"
)

// remotePageSize is how many remote sessions a page of the list shows.
const remotePageSize = 50

// remoteListPageRoutes: the caller's remote sessions and their runners'
// presence (remoteSession.list, a page at a time), and the events that
// tell the open list it changed. Like the remote-session routes, they
// exist only with a desktop service.
func (s *Server) remoteListPageRoutes() {
	if s.cfg.Desktop == nil {
		return
	}
	s.mux.Handle("GET /ui/remote", s.authedPage(s.remoteListPage))
	s.mux.Handle("GET /ui/remote/events", s.authedPage(s.remoteListEvents))
}

// remoteListPage is the list's page; ?after= (a page's next) a later one.
// Asked for a fragment, the first page answers with its live part, a
// later one with its rows alone and the page after in Spine-More.
func (s *Server) remoteListPage(w http.ResponseWriter, r *http.Request) {
	after, err := desktop.ParseSessionCursor(r.URL.Query().Get("after"))
	if err != nil {
		s.pageMessage(w, r, http.StatusBadRequest, "remote", "Bad request", err.Error())
		return
	}
	v, err := s.remoteList(r, after)
	if err != nil {
		s.pageFailed(w, "remote sessions page", err)
		return
	}
	if v.More != "" {
		w.Header().Set("Spine-More", v.More)
	}
	switch {
	case fragment(r) && !v.Live:
		s.page(w, http.StatusOK, "remote-list-rows", pages.View{Data: v})
	case fragment(r):
		s.page(w, http.StatusOK, "remote-list-live", pages.View{Data: v})
	default:
		pv := view(r, "remote", "Remote sessions", v)
		if v.Live {
			pv.Events, pv.Refresh = "/ui/remote/events", 30
		}
		s.page(w, http.StatusOK, "remote-list", pv)
	}
}

// remoteList reads a page of the caller's remote sessions after the
// cursor and, on the first page or a whole page, the runners' presence.
func (s *Server) remoteList(r *http.Request, after desktop.SessionCursor) (pages.RemoteListView, error) {
	v := pages.RemoteListView{Live: after == desktop.SessionCursor{},
		PresenceMinutes: int(desktop.PresenceWindow.Minutes())}
	sessions, err := s.cfg.Desktop.Sessions(r.Context(), owner(r), after, remotePageSize+1)
	if err != nil {
		return v, err
	}
	v.Sessions = sessions
	if len(sessions) > remotePageSize {
		v.Sessions = sessions[:remotePageSize]
		next := desktop.NextSessions(v.Sessions[remotePageSize-1])
		v.More = "/ui/remote?" + url.Values{"after": {next.String()}}.Encode()
	}
	if fragment(r) && !v.Live {
		return v, nil // the rows alone
	}
	v.Runners, err = s.cfg.Desktop.Runners(r.Context(), owner(r))
	return v, err
}

// runnerPoll is how often the list's events look at the runners'
// presence, which changes with time and heartbeats, announced by nothing.
const runnerPoll = 2 * time.Second

// remoteListEvents tells the open list that one of the caller's remote
// sessions changed (desktop's announcements) or a runner's presence did
// (a poll of the runners, at most 100 rows of the caller's).
func (s *Server) remoteListEvents(w http.ResponseWriter, r *http.Request) {
	ch, cancel := s.cfg.Desktop.ListChanges(owner(r))
	defer cancel()
	who := owner(r)
	runners, _ := s.cfg.Desktop.Runners(r.Context(), who)
	s.stream(w, r, pageStream{what: "remote list events", ready: sse{"ready", map[string]any{"runners": len(runners)}},
		pushed: ch, onPush: func(a desktop.Announcement) sse {
			return sse{"change", map[string]any{"sessionId": a.SessionID}}
		},
		every: runnerPoll, poll: func(ctx context.Context) (sse, bool, error) {
			now, err := s.cfg.Desktop.Runners(ctx, who)
			if err != nil || slices.EqualFunc(now, runners, sameRunner) {
				return sse{}, false, err
			}
			runners = now
			return sse{"change", map[string]any{"runners": len(runners)}}, false, nil
		}})
}

// sameRunner: nothing the list shows of the runner changed.
func sameRunner(a, b desktop.Runner) bool {
	return a.ID == b.ID && a.Machine == b.Machine && a.Present == b.Present && a.LastSeen.Equal(b.LastSeen) &&
		a.ProtocolVersion == b.ProtocolVersion && slices.Equal(a.Apps, b.Apps) && slices.Equal(a.Capabilities, b.Capabilities)
}
