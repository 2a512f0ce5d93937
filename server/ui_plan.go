package server

import (
	"errors"
	"net/http"

	"github.com/spinehq/spine/streams"
	"github.com/spinehq/spine/trace"
)

// planPageRoutes: a plan from the top down, by plan run or plan id.
func (s *Server) planPageRoutes() {
	s.mux.Handle("GET /ui/plans/{id}", s.authedPage(s.planPage))
}

// planPage is the plan's trace, as GET /v1/provenance/{id} answers it for
// a plan; another member's plan is the 404 page of a missing one.
func (s *Server) planPage(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	err := trace.ErrNotFound
	var p *trace.Plan
	if streams.ValidID(id) {
		p, err = s.planTrace(r, id)
	}
	if errors.Is(err, trace.ErrNotFound) {
		s.pageMessage(w, r, http.StatusNotFound, "provenance", "Not found", "plan not found")
		return
	}
	if err != nil {
		s.pageFailed(w, "plan page", err)
		return
	}
	s.page(w, http.StatusOK, "plan", view(r, "provenance", "Plan "+id, p))
}
