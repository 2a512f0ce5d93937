package server

import (
	"errors"
	"net/http"
	"net/url"
	"strings"

	"github.com/spinehq/spine/server/pages"
	"github.com/spinehq/spine/trace"
)

// provenancePageRoutes: the provenance search form and the trace of an
// id, the same answer as GET /v1/provenance/{id} (traceID).
func (s *Server) provenancePageRoutes() {
	s.mux.Handle("GET /ui/provenance", s.authedPage(s.provenanceSearch))
	s.mux.Handle("GET /ui/provenance/{id}", s.authedPage(s.provenancePage))
}

// provenanceSearch is the form; submitted (?id=), it goes to the id's page.
func (s *Server) provenanceSearch(w http.ResponseWriter, r *http.Request) {
	if id := strings.TrimSpace(r.URL.Query().Get("id")); id != "" {
		http.Redirect(w, r, "/ui/provenance/"+url.PathEscape(id), http.StatusSeeOther)
		return
	}
	s.page(w, http.StatusOK, "provenance", view(r, "provenance", "Provenance", pages.ProvenanceView{}))
}

// provenancePage is an id's trace. Nothing of the caller's under the id,
// another member's file, session or plan included, is one 404 page.
func (s *Server) provenancePage(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	t, err := s.traceID(r, id)
	if errors.Is(err, trace.ErrNotFound) {
		s.pageMessage(w, r, http.StatusNotFound, "provenance", "Not found",
			"nothing of yours to trace: no file, artifact, session or plan has this id")
		return
	}
	if err != nil {
		s.pageFailed(w, "provenance page", err)
		return
	}
	v := pages.ProvenanceView{ID: id, Session: t.Session, Plan: t.Plan}
	if t.File != nil {
		readable, err := trace.CanRead(r.Context(), s.cfg.Pool, owner(r), t.File.Digest)
		if err != nil {
			s.pageFailed(w, "provenance page", err)
			return
		}
		v.File = &pages.FileTrace{File: t.File, Readable: readable}
	}
	s.page(w, http.StatusOK, "provenance", view(r, "provenance", "Provenance of "+id, v))
}
