package server

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"net/http"
	"time"

	"github.com/spinehq/spine/desktop"
	"github.com/spinehq/spine/server/pages"
)

// sessionPageRoutes: a remote session's page, server-rendered and live.
// It signs in like every /ui page (authedPage: the spine_token cookie, set
// once from ?token=). Live updates come from a few lines of inline script
// listening to /ui/sessions/{id}/events; without script the page refreshes
// itself every 5 s while the session runs. The markup is pages.Session.
func (s *Server) sessionPageRoutes() {
	s.mux.Handle("GET /ui/sessions/{id}", s.authedPage(s.sessionPage))
	s.mux.Handle("GET /ui/sessions/{id}/events", s.authedPage(s.sessionPageEvents))
}

func (s *Server) sessionPage(w http.ResponseWriter, r *http.Request) {
	res, err := s.cfg.Desktop.Read(r.Context(), owner(r), r.PathValue("id"), "", desktop.MaxReadLimit)
	if errors.Is(err, desktop.ErrUnknownSession) {
		writePageError(w, http.StatusNotFound, "remote session not found")
		return
	}
	if err != nil {
		s.log.Error("session page failed", "err", err)
		writePageError(w, http.StatusInternalServerError, "reading the session failed; see the server log")
		return
	}
	v := pages.SessionView{ReadResult: res, Nonce: nonce()}
	render := pages.Session
	if r.URL.Query().Get("fragment") == "1" {
		render = pages.SessionLive
	}
	var b bytes.Buffer
	if err := render(&b, v); err != nil {
		s.log.Error("render session page", "err", err)
		writePageError(w, http.StatusInternalServerError, "rendering failed")
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cache-Control", "no-store")
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; connect-src 'self'; script-src 'nonce-"+v.Nonce+"'")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(b.Bytes())
}

func nonce() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
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
	flusher, ok := w.(http.Flusher)
	if !ok {
		writeError(w, http.StatusInternalServerError, CodeInternal, "streaming unsupported")
		return
	}
	startSSE(w)
	writeSSE(w, "ready", map[string]any{"state": sess.State, "version": sess.Version})
	flusher.Flush()
	tick := time.NewTicker(sseKeepAlive)
	defer tick.Stop()
	poll := time.NewTicker(recordedPoll)
	defer poll.Stop()
	progress, _ := s.cfg.Desktop.RecordedProgress(r.Context(), owner(r), id)
	for {
		polling := poll.C // the recorded sessions are polled only while something can still change them
		if progress.Settled {
			polling = nil
		}
		select {
		case <-r.Context().Done():
			return
		case _, open := <-ch:
			if !open {
				return
			}
			writeSSE(w, "change", map[string]any{"sessionId": id})
			progress.Settled = false // a task changed (a follow-up, say): look again
		case <-polling:
			now, err := s.cfg.Desktop.RecordedProgress(r.Context(), owner(r), id)
			if err != nil || now == progress {
				continue
			}
			changed := now.Mark != progress.Mark
			progress = now
			if !changed {
				continue
			}
			writeSSE(w, "change", map[string]any{"sessionId": id})
		case <-tick.C:
			_, _ = w.Write([]byte(": keepalive\n\n"))
		}
		flusher.Flush()
	}
}

// recordedPoll is how often an open session page looks for new content in
// the app sessions recorded for its tasks (the recorder's, which the
// desktop service does not announce), until the session and all of them
// have ended.
const recordedPoll = time.Second
