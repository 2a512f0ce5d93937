package server

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strconv"

	"github.com/spinehq/spine/server/pages"
	"github.com/spinehq/spine/streams"
)

// deadLetterPageSize is how many dead letters a page of the list shows.
const deadLetterPageSize = 50

// deadLetterPageRoutes: the caller's dead letters (an admin's: the org's),
// scoped and ordered exactly as GET /v1/deadletters, and one dead letter
// with its message as stored.
func (s *Server) deadLetterPageRoutes() {
	s.mux.Handle("GET /ui/deadletters", s.authedPage(s.deadLettersPage))
	s.mux.Handle("GET /ui/deadletters/{stream}/{seq}", s.authedPage(s.deadLetterPage))
}

// deadLettersPage is a page of the list after ?after= (a page's next);
// asked for a fragment, its rows alone, the page after in Spine-More.
func (s *Server) deadLettersPage(w http.ResponseWriter, r *http.Request) {
	after, err := streams.ParseDeadLetterCursor(r.URL.Query().Get("after"))
	if err != nil {
		s.pageMessage(w, r, http.StatusBadRequest, "deadletters", "Bad request", "after must be a page's next (STREAM:SEQ)")
		return
	}
	scope := deadLetterScope(r)
	dls, err := streams.ListDeadLetters(r.Context(), s.cfg.Pool, scope, after, deadLetterPageSize+1)
	if err != nil {
		s.pageFailed(w, "dead letters page", err)
		return
	}
	v := pages.DeadLettersView{DeadLetters: dls, WholeOrg: scope.WholeOrg}
	if len(dls) > deadLetterPageSize {
		v.DeadLetters = dls[:deadLetterPageSize]
		last := v.DeadLetters[deadLetterPageSize-1]
		next := streams.DeadLetterCursor{Stream: last.Stream, Seq: last.Seq}
		v.More = "/ui/deadletters?" + url.Values{"after": {next.String()}}.Encode()
		w.Header().Set("Spine-More", v.More)
	}
	if fragment(r) {
		s.page(w, http.StatusOK, "deadletter-rows", pages.View{Data: v})
		return
	}
	s.page(w, http.StatusOK, "deadletters", view(r, "deadletters", "Dead letters", v))
}

// deadLetterPage is one dead letter; another member's is the same 404
// page as one that does not exist.
func (s *Server) deadLetterPage(w http.ResponseWriter, r *http.Request) {
	stream := r.PathValue("stream")
	seq, err := strconv.ParseUint(r.PathValue("seq"), 10, 63)
	var dl *streams.DeadLetter
	if err == nil && streams.ValidID(stream) {
		dl, err = streams.GetDeadLetter(r.Context(), s.cfg.Pool, deadLetterScope(r), stream, seq)
	} else {
		err = streams.ErrNotFound
	}
	if errors.Is(err, streams.ErrNotFound) {
		s.pageMessage(w, r, http.StatusNotFound, "deadletters", "Not found", "dead letter not found")
		return
	}
	if err != nil {
		s.pageFailed(w, "dead letter page", err)
		return
	}
	v := pages.DeadLetterView{DeadLetter: dl, WholeOrg: deadLetterScope(r).WholeOrg}
	v.Text, v.Size, v.Shown = messageText(dl.Message, pages.MaxMessageText)
	s.page(w, http.StatusOK, "deadletter", view(r, "deadletters", "Dead letter "+dl.Stream+" #"+strconv.FormatUint(dl.Seq, 10), v))
}

// messageText is a stored message as text (a message that was not JSON is
// kept as a JSON string of its bytes: its text), cut at a character
// boundary to at most limit bytes; size is the whole text's length.
func messageText(m json.RawMessage, limit int) (text string, size, shown int64) {
	text = string(m)
	var s string
	if len(m) > 0 && m[0] == '"' && json.Unmarshal(m, &s) == nil {
		text = s
	}
	size = int64(len(text))
	text = pages.Cut(text, limit)
	return text, size, int64(len(text))
}
