package server

import (
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/spinehq/spine/recorder"
	"github.com/spinehq/spine/server/pages"
	"github.com/spinehq/spine/spine"
	"github.com/spinehq/spine/streams"
	"github.com/spinehq/spine/views"
)

// Page sizes of a recorded session's page: what one render or one "later"
// fetch reads, whatever the session's length.
const (
	sessionPageLines     = 500
	sessionPageSteps     = 100
	sessionPageArtifacts = 100
)

// sessionPageRoutes: a recorded session's page (any session the recorder
// holds), its parts' later pages and live tails, its events, and the
// Library files its steps link to. The markup is pages' "session".
func (s *Server) sessionPageRoutes() {
	s.mux.Handle("GET /ui/sessions/{id}", s.authedPage(s.sessionPage))
	s.mux.Handle("GET /ui/sessions/{id}/transcript", s.authedPage(s.sessionPart(transcriptPart)))
	s.mux.Handle("GET /ui/sessions/{id}/steps", s.authedPage(s.sessionPart(stepsPart)))
	s.mux.Handle("GET /ui/sessions/{id}/artifacts", s.authedPage(s.sessionArtifacts))
	s.mux.Handle("GET /ui/sessions/{id}/events", s.authedPage(s.sessionEvents))
	// The same file route as /v1/library/files/{digest}, for the page's
	// sign-in: the cookie is the pages' alone (Path /ui/), never a /v1 bearer.
	s.mux.Handle("GET /ui/files/{digest}", s.authedPage(s.pageFile))
}

// sessionPage is the page: its facts, and the first page (or, without
// script, the page asked for with ?after= and ?steps=) of its transcript,
// steps and artifacts. With fragment=1 it is the facts alone, which the
// page refreshes on each change.
func (s *Server) sessionPage(w http.ResponseWriter, r *http.Request) {
	v, ok := s.sessionView(w, r)
	if !ok {
		return
	}
	if fragment(r) {
		s.page(w, http.StatusOK, "session-summary.part", pages.View{Data: v})
		return
	}
	after, ok := s.pageCursor(w, r, "after", transcriptPart.max)
	if !ok {
		return
	}
	steps, ok := s.pageCursor(w, r, "steps", stepsPart.max)
	if !ok {
		return
	}
	err := s.readLines(r, v, after)
	if err == nil {
		err = s.readSteps(r, v, steps)
	}
	if err == nil {
		err = s.readArtifacts(r, v, "")
	}
	if err != nil {
		s.pageFailed(w, "session page", err)
		return
	}
	pv := view(r, "sessions", "Session "+v.ID, v)
	pv.Events = v.Path + "/events"
	if !v.Ended() {
		pv.Refresh = 5
	}
	s.page(w, http.StatusOK, "session", pv)
}

// sessionView reads the session in the caller's scope, or answers the 404
// page (the same for another member's session as for a missing one).
func (s *Server) sessionView(w http.ResponseWriter, r *http.Request) (*pages.SessionView, bool) {
	id := r.PathValue("id")
	var v *views.Session
	err := recorder.ErrNotFound
	if streams.ValidID(id) {
		v, err = views.ReadSession(r.Context(), s.cfg.Pool, scope(r), id)
	}
	if errors.Is(err, recorder.ErrNotFound) {
		s.pageMessage(w, r, http.StatusNotFound, "sessions", "Not found", "session not found")
		return nil, false
	}
	if err != nil {
		s.pageFailed(w, "session page", err)
		return nil, false
	}
	return &pages.SessionView{Session: v, Path: "/ui/sessions/" + id, Own: v.Member == caller(r).Member}, true
}

// pageCursor reads a page's numeric cursor (default 0) of at most max; a
// bad one, or one past any the list can hold, is a 400 page.
func (s *Server) pageCursor(w http.ResponseWriter, r *http.Request, name string, max int64) (int64, bool) {
	raw := r.URL.Query().Get(name)
	if raw == "" {
		return 0, true
	}
	n, err := strconv.ParseInt(raw, 10, 64)
	if err != nil || n < 0 || n > max {
		s.pageMessage(w, r, http.StatusBadRequest, "sessions", "Bad request",
			fmt.Sprintf("%s must be an integer from 0 to %d", name, max))
		return 0, false
	}
	return n, true
}

// readLines reads the transcript's page after seq after. The last page of
// a running session is tailed.
func (s *Server) readLines(r *http.Request, v *pages.SessionView, after int64) error {
	lines, err := recorder.ReadLines(r.Context(), s.cfg.Pool, v.ID, v.SessionRunID, after, sessionPageLines)
	if err != nil {
		return err
	}
	t := &v.Transcript
	t.Lines, t.Start, t.After = lines.Lines, after, lines.Next
	if lines.More {
		t.Next = partURL(v.Path+"/transcript", "after", strconv.FormatInt(lines.Next, 10))
	} else if !v.Ended() {
		t.Tail = partURL(v.Path+"/transcript", "tail", "1")
	}
	return nil
}

// readSteps reads the steps' page after step after (at most stepsPart's
// max). The last page of a running session is tailed by the run's
// observations, read first: one that lands while the page is read comes
// again in the tail, which replaces its step.
func (s *Server) readSteps(r *http.Request, v *pages.SessionView, after int64) error {
	seen := 0
	if !v.Ended() {
		var err error
		if seen, err = spine.LastObservation(r.Context(), s.cfg.Pool, v.SessionRunID); err != nil {
			return err
		}
	}
	page, err := spine.Steps(r.Context(), s.cfg.Pool, v.SessionRunID, int(after), sessionPageSteps)
	if err != nil {
		return err
	}
	st := &v.Steps
	st.Steps = pages.StepLines(page.Steps)
	if page.More {
		st.Next = partURL(v.Path+"/steps", "after", strconv.Itoa(page.Next))
	} else if !v.Ended() {
		st.Tail = v.Path + "/steps?" + url.Values{"tail": {"1"}, "from": {strconv.FormatInt(after, 10)}}.Encode()
		st.After = seen
	}
	return nil
}

// tailSteps reads the steps after step from (the tailed page's start) that
// have an observation after the run's observation after: the new ones and
// those a late result changed. Spine-After is the last observation looked
// at; Spine-More says more wait.
func (s *Server) tailSteps(r *http.Request, v *pages.SessionView, from, after int64) error {
	page, err := spine.StepsObserved(r.Context(), s.cfg.Pool, v.SessionRunID, int(from), int(after), sessionPageSteps)
	if err != nil {
		return err
	}
	st := &v.Steps
	st.Steps, st.After = pages.StepLines(page.Steps), page.Next
	if page.More {
		st.Next = v.Path + "/steps?" + url.Values{"tail": {"1"}, "from": {strconv.FormatInt(from, 10)},
			"after": {strconv.Itoa(page.Next)}}.Encode()
	}
	return nil
}

// readArtifacts reads the artifacts' page after the artifact after.
func (s *Server) readArtifacts(r *http.Request, v *pages.SessionView, after string) error {
	arts, err := recorder.SessionArtifacts(r.Context(), s.cfg.Pool, v.ID, after, sessionPageArtifacts+1)
	if err != nil {
		return err
	}
	a := &v.Artifacts
	a.Artifacts = arts
	if len(arts) > sessionPageArtifacts {
		a.Artifacts = arts[:sessionPageArtifacts]
		a.Next = partURL(v.Path+"/artifacts", "after", a.Artifacts[sessionPageArtifacts-1].ID)
	}
	return nil
}

func partURL(path, key, value string) string {
	return path + "?" + url.Values{key: {value}}.Encode()
}

// sessionPart is one of the page's paged lists: the key and heading the
// page opens it at without script, its cursor's bound, how a page of it is
// read and what the reading leaves to follow, and the templates of its
// items and of a page of them as a list of its own.
type sessionPart struct {
	what, key, anchor string
	max               int64
	read              func(s *Server, r *http.Request, v *pages.SessionView, after int64) error
	// tail, when set, reads the live tail (tail=1) instead of read: the
	// items after ?after= of the page that starts after ?from=.
	tail func(s *Server, r *http.Request, v *pages.SessionView, from, after int64) error
	// cursors are the page after the one read ("" = none) and the last
	// seq, step or (a steps tail's) observation it covers.
	cursors     func(v *pages.SessionView) (next, last string)
	items, list string
}

var (
	// transcriptPart's cursor is a seq (?after= on the page).
	transcriptPart = sessionPart{what: "transcript", key: "after", anchor: "#transcript-h", max: math.MaxInt64,
		read: (*Server).readLines,
		cursors: func(v *pages.SessionView) (string, string) {
			return v.Transcript.Next, strconv.FormatInt(v.Transcript.After, 10)
		},
		items: "session-line-items.part", list: "session-lines.part"}
	// stepsPart's cursor is a step's idx (?steps= on the page), an int4;
	// its tail's is an observation's idx, an int4 too.
	stepsPart = sessionPart{what: "steps", key: "steps", anchor: "#steps-h", max: math.MaxInt32,
		read: (*Server).readSteps, tail: (*Server).tailSteps,
		cursors: func(v *pages.SessionView) (string, string) { return v.Steps.Next, strconv.Itoa(v.Steps.After) },
		items:   "session-step-items.part", list: "session-steps.part"}
)

// sessionPart answers spine.js for one of the page's lists: with tail=1
// the items after ?after= (Spine-After the last they cover), else the page
// after ?after= as a list of its own. Spine-More is the page after, when
// there is one. Opened without script, it is the page at that place.
func (s *Server) sessionPart(p sessionPart) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		v, ok := s.sessionView(w, r)
		if !ok {
			return
		}
		after, ok := s.pageCursor(w, r, "after", p.max)
		if !ok {
			return
		}
		if !fragment(r) {
			http.Redirect(w, r, partURL(v.Path, p.key, strconv.FormatInt(after, 10))+p.anchor, http.StatusSeeOther)
			return
		}
		read := func() error { return p.read(s, r, v, after) }
		if p.tail != nil && r.URL.Query().Get("tail") == "1" {
			from, ok := s.pageCursor(w, r, "from", p.max)
			if !ok {
				return
			}
			read = func() error { return p.tail(s, r, v, from, after) }
		}
		if err := read(); err != nil {
			s.pageFailed(w, "session "+p.what, err)
			return
		}
		next, last := p.cursors(v)
		if next != "" {
			w.Header().Set("Spine-More", next)
		}
		name := p.list
		if r.URL.Query().Get("tail") == "1" {
			w.Header().Set("Spine-After", last)
			name = p.items
		}
		s.page(w, http.StatusOK, name, pages.View{Data: v})
	}
}

// sessionArtifacts answers spine.js for the artifacts: with ?after= (an
// artifact's id) the rows of the page after it, Spine-More the page after
// that; without, the whole part, which the page refreshes on each change.
func (s *Server) sessionArtifacts(w http.ResponseWriter, r *http.Request) {
	v, ok := s.sessionView(w, r)
	if !ok {
		return
	}
	if !fragment(r) {
		http.Redirect(w, r, v.Path+"#artifacts-h", http.StatusSeeOther)
		return
	}
	after := r.URL.Query().Get("after")
	if len(after) > 512 || strings.ContainsRune(after, 0) {
		s.pageMessage(w, r, http.StatusBadRequest, "sessions", "Bad request", "after must be an artifact's id")
		return
	}
	if err := s.readArtifacts(r, v, after); err != nil {
		s.pageFailed(w, "session artifacts", err)
		return
	}
	if after == "" {
		s.page(w, http.StatusOK, "session-artifacts.part", pages.View{Data: v})
		return
	}
	if v.Artifacts.Next != "" {
		w.Header().Set("Spine-More", v.Artifacts.Next)
	}
	s.page(w, http.StatusOK, "session-artifact-rows.part", pages.View{Data: v})
}
