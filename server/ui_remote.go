package server

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/spinehq/spine/desktop"
	"github.com/spinehq/spine/server/pages"
)

// remotePageRoutes: a remote session's page, server-rendered and live.
// Its events (/ui/remote/{id}/events) say when the session changed; the
// script (spine.js) then fetches the page's live part again (?fragment=1).
// Without script the page refreshes itself every 5 s while the session
// runs. The markup is pages' "remote".
func (s *Server) remotePageRoutes() {
	s.mux.Handle("GET /ui/remote/{id}", s.authedPage(s.remotePage))
	s.mux.Handle("GET /ui/remote/{id}/events", s.authedPage(s.sessionPageEvents))
}

func (s *Server) remotePage(w http.ResponseWriter, r *http.Request) {
	res, err := s.cfg.Desktop.Read(r.Context(), owner(r), r.PathValue("id"), "", desktop.MaxReadLimit)
	if errors.Is(err, desktop.ErrUnknownSession) {
		s.pageMessage(w, r, http.StatusNotFound, "remote", "Not found", "remote session not found")
		return
	}
	if err != nil {
		s.pageFailed(w, "remote session page", err)
		return
	}
	data := pages.RemoteView{ReadResult: res, Path: r.URL.Path}
	if fragment(r) {
		s.page(w, http.StatusOK, "remote-live", pages.View{Data: data})
		return
	}
	title := res.Session.Title
	if title == "" {
		title = "Remote session " + res.Session.ID
	}
	v := view(r, "remote", title, data)
	v.Events = r.URL.Path + "/events"
	if !res.Ended {
		v.Refresh = 5
	}
	s.page(w, http.StatusOK, "remote", v)
}

// sessionPageEvents tells an open page that its session changed (event
// "change"); the page then fetches its live part again.
func (s *Server) sessionPageEvents(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	ch, cancel := s.cfg.Desktop.Changes(id)
	defer cancel()
	sess, err := s.cfg.Desktop.Session(r.Context(), owner(r), id)
	if err != nil {
		s.desktopError(w, "watch session", err)
		return
	}
	who := owner(r)
	progress, _ := s.cfg.Desktop.RecordedProgress(r.Context(), who, id)
	changed := sse{"change", map[string]any{"sessionId": id}}
	s.stream(w, r, pageStream{what: "remote session events",
		ready:  sse{"ready", map[string]any{"state": sess.State, "version": sess.Version}},
		pushed: ch, onPush: func(desktop.Announcement) sse {
			progress.Settled = false // a task changed (a follow-up, say): look again
			return changed
		},
		// The recorded sessions are polled only while something can still change them.
		every: recordedPoll, poll: func(ctx context.Context) (sse, bool, error) {
			if progress.Settled {
				return sse{}, false, nil
			}
			now, err := s.cfg.Desktop.RecordedProgress(ctx, who, id)
			if err != nil || now == progress {
				return sse{}, false, err
			}
			moved := now.Mark != progress.Mark
			progress = now
			if !moved {
				return sse{}, false, nil
			}
			return changed, false, nil
		}})
}

// recordedPoll is how often an open session page looks for new content in
// the app sessions recorded for its tasks (the recorder's, which the
// desktop service does not announce), until the session and all of them
// have ended.
const recordedPoll = time.Second
