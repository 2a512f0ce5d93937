package server

import (
	"errors"
	"net/http"
	"strconv"

	"github.com/spinehq/spine/recorder"
	"github.com/spinehq/spine/spine"
	"github.com/spinehq/spine/streams"
	"github.com/spinehq/spine/trace"
)

// Page limits.
const (
	DefaultPageLimit = 500
	MaxPageLimit     = 5000
)

func (s *Server) getSession(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if !streams.ValidID(id) {
		notFound(w, "session")
		return
	}
	if sess, ok := s.callerSession(w, r, id, scope(r)); ok {
		writeJSON(w, http.StatusOK, sess)
	}
}

// callerSession is session id in scope: a session read's scope(r) (an org
// admin reads the org's recorded sessions, as their pages do; a member and
// a runner token, which carries no role, their own), or owner(r) for what
// only the owner may do (cancel). Outside it, another org always, it
// answers the 404 of a session that does not exist, or a 500.
func (s *Server) callerSession(w http.ResponseWriter, r *http.Request, id string, scope streams.Owner) (*recorder.Session, bool) {
	sess, err := recorder.GetSessionIn(r.Context(), s.cfg.Pool, scope, id)
	if err == nil && !runnerMaySee(r, sess.WorkerID, sess.TaskID) {
		err = recorder.ErrNotFound
	}
	if errors.Is(err, recorder.ErrNotFound) {
		notFound(w, "session")
		return nil, false
	}
	if err != nil {
		s.internal(w, "get session", err)
		return nil, false
	}
	return sess, true
}

// SessionList is a page of GET /v1/sessions.
type SessionList struct {
	Sessions []recorder.SessionMark `json:"sessions"`
	// Next is the after of the next page; More says whether there is one.
	Next string `json:"next,omitempty"`
	More bool   `json:"more"`
}

// listSessions pages through the caller's sessions in id order: ?after=
// (an id, default the start) and limit (default 500, at most 5000). An
// org admin's ?member= lists that member's instead; a member may name
// only themself (a 400 else, as the sessions page's filter).
func (s *Server) listSessions(w http.ResponseWriter, r *http.Request) {
	_, limit, ok := paging(w, r)
	if !ok {
		return
	}
	q := r.URL.Query()
	after := q.Get("after")
	if after != "" && !streams.ValidID(after) {
		writeError(w, http.StatusBadRequest, CodeBadRequest, "after must be a session id")
		return
	}
	whose, ok := listedMember(w, r, q.Get("member"))
	if !ok {
		return
	}
	marks, err := recorder.ListSessions(r.Context(), s.cfg.Pool, whose, after, limit+1)
	if err != nil {
		s.internal(w, "list sessions", err)
		return
	}
	page := SessionList{Sessions: marks}
	if len(marks) > limit {
		page.Sessions, page.More = marks[:limit], true
	}
	if n := len(page.Sessions); n > 0 {
		page.Next = page.Sessions[n-1].ID
	}
	writeJSON(w, http.StatusOK, page)
}

// listedMember is whose sessions GET /v1/sessions lists: the caller's, or
// the member ?member= names, which only an org admin may name for anyone
// but themself.
func listedMember(w http.ResponseWriter, r *http.Request, member string) (streams.Owner, bool) {
	who := owner(r)
	switch {
	case member == "" || member == who.Member:
		return who, true
	case !streams.ValidOwnerID(member):
		writeError(w, http.StatusBadRequest, CodeBadRequest, "member must be a member id")
		return who, false
	case !caller(r).IsAdmin():
		writeError(w, http.StatusBadRequest, CodeBadRequest,
			"member: only an org admin lists another member's sessions; your list holds your own")
		return who, false
	}
	who.Member = member
	return who, true
}

func (s *Server) getTranscript(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	since, limit, ok := paging(w, r)
	if !ok {
		return
	}
	if !streams.ValidID(id) {
		notFound(w, "session")
		return
	}
	if _, isRunner := runnerCaller(r); isRunner {
		if _, ok := s.callerSession(w, r, id, scope(r)); !ok {
			return
		}
	}
	page, err := recorder.ReadTranscript(r.Context(), s.cfg.Pool, scope(r), id, int64(since), limit)
	if errors.Is(err, recorder.ErrNotFound) {
		notFound(w, "session")
		return
	}
	if err != nil {
		s.internal(w, "read transcript", err)
		return
	}
	writeJSON(w, http.StatusOK, page)
}

func (s *Server) getSteps(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	since, limit, ok := paging(w, r)
	if !ok {
		return
	}
	run, err := spine.GetRunIn(r.Context(), s.cfg.Pool, scope(r), id)
	if errors.Is(err, spine.ErrNotFound) {
		s.planRunSteps(w, r, id)
		return
	}
	if err != nil {
		s.internal(w, "get run", err)
		return
	}
	page, err := spine.Steps(r.Context(), s.cfg.Pool, id, since, limit)
	if err != nil {
		s.internal(w, "read steps", err)
		return
	}
	page.Kind = run.Kind
	writeJSON(w, http.StatusOK, page)
}

// planRunSteps answers for an id no run of the caller's has: a plan run's
// steps, each with the caller's sessions that ran it, in one bounded
// answer (since and limit page a recording run's steps only).
func (s *Server) planRunSteps(w http.ResponseWriter, r *http.Request, id string) {
	steps, err := trace.StepsOfPlanRun(r.Context(), s.cfg.Pool, owner(r), id)
	if errors.Is(err, trace.ErrNotFound) {
		notFound(w, "run")
		return
	}
	if err != nil {
		s.internal(w, "read plan run", err)
		return
	}
	writeJSON(w, http.StatusOK, steps)
}

// paging reads since (default 0) and limit (default 500, at most 5000).
func paging(w http.ResponseWriter, r *http.Request) (since, limit int, ok bool) {
	q := r.URL.Query()
	since, limit = 0, DefaultPageLimit
	var err error
	if v := q.Get("since"); v != "" {
		if since, err = strconv.Atoi(v); err != nil || since < 0 {
			writeError(w, http.StatusBadRequest, CodeBadRequest, "since must be a non-negative integer")
			return 0, 0, false
		}
	}
	if v := q.Get("limit"); v != "" {
		if limit, err = strconv.Atoi(v); err != nil || limit < 1 || limit > MaxPageLimit {
			writeError(w, http.StatusBadRequest, CodeBadRequest, "limit must be 1 to 5000")
			return 0, 0, false
		}
	}
	return since, limit, true
}

func (s *Server) internal(w http.ResponseWriter, op string, err error) {
	s.log.Error(op+" failed", "err", err)
	writeError(w, http.StatusInternalServerError, CodeInternal, op+" failed; see the server log")
}
