package server

import (
	"errors"
	"net/http"
	"strconv"

	"github.com/spinehq/spine/streams"
)

// DeadLetterList is a page of GET /v1/deadletters.
type DeadLetterList struct {
	DeadLetters []streams.DeadLetter `json:"deadLetters"`
	// Next is the after of the next page; More says whether there is one.
	Next string `json:"next,omitempty"`
	More bool   `json:"more"`
}

func (s *Server) deadLetterRoutes() {
	s.mux.Handle("GET /v1/deadletters", s.authed(s.listDeadLetters))
	s.mux.Handle("GET /v1/deadletters/{stream}/{seq}", s.authed(s.getDeadLetter))
}

// deadLetterScope is the caller's own dead letters, or its org's for an
// org admin.
func deadLetterScope(r *http.Request) streams.DeadLetterScope {
	c := caller(r)
	return streams.DeadLetterScope{Owner: owner(r), WholeOrg: c.IsAdmin()}
}

// listDeadLetters pages through the caller's dead letters in (stream, seq)
// order: ?after= (a page's next, default the start) and limit (default
// 500, at most 5000). since, which other lists take, is refused rather than
// ignored: a caller who sent it would read a page they did not ask for.
func (s *Server) listDeadLetters(w http.ResponseWriter, r *http.Request) {
	if r.URL.Query().Has("since") {
		writeError(w, http.StatusBadRequest, CodeBadRequest, "dead letters page with after (a page's next), not since")
		return
	}
	_, limit, ok := paging(w, r)
	if !ok {
		return
	}
	after, err := streams.ParseDeadLetterCursor(r.URL.Query().Get("after"))
	if err != nil {
		writeError(w, http.StatusBadRequest, CodeBadRequest, "after must be a page's next (STREAM:SEQ)")
		return
	}
	dls, err := streams.ListDeadLetters(r.Context(), s.cfg.Pool, deadLetterScope(r), after, limit+1)
	if err != nil {
		s.internal(w, "list dead letters", err)
		return
	}
	page := DeadLetterList{DeadLetters: dls}
	if len(dls) > limit {
		page.DeadLetters, page.More = dls[:limit], true
	}
	if n := len(page.DeadLetters); n > 0 {
		last := page.DeadLetters[n-1]
		page.Next = streams.DeadLetterCursor{Stream: last.Stream, Seq: last.Seq}.String()
	}
	writeJSON(w, http.StatusOK, page)
}

// getDeadLetter returns one dead letter with its message; another member's
// is the same 404 as one that does not exist.
func (s *Server) getDeadLetter(w http.ResponseWriter, r *http.Request) {
	stream := r.PathValue("stream")
	seq, err := strconv.ParseUint(r.PathValue("seq"), 10, 63)
	if err != nil || !streams.ValidID(stream) {
		notFound(w, "dead letter")
		return
	}
	dl, err := streams.GetDeadLetter(r.Context(), s.cfg.Pool, deadLetterScope(r), stream, seq)
	if errors.Is(err, streams.ErrNotFound) {
		notFound(w, "dead letter")
		return
	}
	if err != nil {
		s.internal(w, "get dead letter", err)
		return
	}
	writeJSON(w, http.StatusOK, dl)
}
