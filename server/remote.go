package server

import (
	"net/http"
	"strconv"

	"github.com/spinehq/spine/desktop"
)

// remoteSessionRoutes are remoteSession.create|send|read|list (and cancel)
// over HTTP, for the member a member token names.
func (s *Server) remoteSessionRoutes() {
	s.mux.Handle("POST /v1/remote-sessions", s.authed(s.createRemoteSession))
	s.mux.Handle("GET /v1/remote-sessions", s.authed(s.listRemoteSessions))
	s.mux.Handle("GET /v1/remote-sessions/{id}", s.authed(s.readRemoteSession))
	s.mux.Handle("POST /v1/remote-sessions/{id}/messages", s.authed(s.sendRemoteSession))
	s.mux.Handle("POST /v1/remote-sessions/{id}/cancel", s.authed(s.cancelRemoteSession))
}

func (s *Server) createRemoteSession(w http.ResponseWriter, r *http.Request) {
	var req desktop.CreateRequest
	if !decodeBody(w, r, &req) {
		return
	}
	sess, err := s.cfg.Desktop.Create(r.Context(), owner(r), req)
	if err != nil {
		s.desktopError(w, "create remote session", err)
		return
	}
	writeJSON(w, http.StatusCreated, sess)
}

func (s *Server) sendRemoteSession(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Prompt string `json:"prompt"`
	}
	if !decodeBody(w, r, &body) {
		return
	}
	rec, err := s.cfg.Desktop.Send(r.Context(), owner(r), r.PathValue("id"), body.Prompt)
	if err != nil {
		s.desktopError(w, "send to remote session", err)
		return
	}
	writeJSON(w, http.StatusAccepted, rec)
}

func (s *Server) readRemoteSession(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	limit := desktop.DefaultReadLimit
	if v := q.Get("limit"); v != "" {
		var err error
		if limit, err = strconv.Atoi(v); err != nil || limit < 1 || limit > desktop.MaxReadLimit {
			writeError(w, http.StatusBadRequest, CodeBadRequest, "limit must be 1 to 1000")
			return
		}
	}
	res, err := s.cfg.Desktop.Read(r.Context(), owner(r), r.PathValue("id"), q.Get("since"), limit)
	if err != nil {
		s.desktopError(w, "read remote session", err)
		return
	}
	writeJSON(w, http.StatusOK, res)
}

func (s *Server) listRemoteSessions(w http.ResponseWriter, r *http.Request) {
	res, err := s.cfg.Desktop.List(r.Context(), owner(r), r.URL.Query().Get("target"))
	if err != nil {
		s.desktopError(w, "list remote sessions", err)
		return
	}
	writeJSON(w, http.StatusOK, res)
}

func (s *Server) cancelRemoteSession(w http.ResponseWriter, r *http.Request) {
	sess, err := s.cfg.Desktop.Cancel(r.Context(), owner(r), r.PathValue("id"))
	if err != nil {
		s.desktopError(w, "cancel remote session", err)
		return
	}
	writeJSON(w, http.StatusOK, sess)
}
