package server

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/spinehq/spine/auth"
	"github.com/spinehq/spine/desktop"
	"github.com/spinehq/spine/streams"
)

// CodeTaskNotHeld refuses a runner's session.start for a task of its member
// that it does not hold now (docs/desktop.md#recording-the-tasks-session).
const CodeTaskNotHeld = "task_not_held"

type runnerKey struct{}

// runnerCaller is the runner whose token the request carries, on the
// routes that take one as well as a member token.
func runnerCaller(r *http.Request) (desktop.RunnerIdentity, bool) {
	id, ok := r.Context().Value(runnerKey{}).(desktop.RunnerIdentity)
	return id, ok
}

// authedOrRunner takes a member token, or a live runner token acting as its
// member: the routes a runner records its task's app session through
// (POST /v1/ingest, GET /v1/sessions/{id} and its transcript). Every other
// member route stays authed, where a runner token is a 401.
func (s *Server) authedOrRunner(h http.HandlerFunc) http.Handler {
	member := s.authed(h)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tok, ok := auth.BearerToken(r)
		if !ok || s.cfg.Desktop == nil {
			member.ServeHTTP(w, r)
			return
		}
		if claims, err := s.cfg.Signer.Verify(tok, auth.AudienceMember, time.Now()); !errors.Is(err, auth.ErrAudience) {
			serveMember(w, r, h, claims, err) // a member token, or one no audience would take
			return
		}
		id, ok := s.verifyRunner(w, r, tok, "spine", "invalid token: ")
		if !ok {
			return
		}
		claims := auth.Claims{Org: id.Org, Member: id.Member, Audience: desktop.AudienceRunner, ID: id.TokenID, ExpiresAt: id.ExpiresAt}
		ctx := context.WithValue(context.WithValue(r.Context(), ctxKey{}, claims), runnerKey{}, id)
		h(w, r.WithContext(ctx))
	})
}

// admitRunner holds an envelope a runner token sends to what a runner may
// record: session envelopes only, and a session.start only with a taskId,
// whose workerId becomes the runner's id (never the sender's word). Whether
// the runner holds the task is linkRunner's, once the start passed every
// other check.
func (s *Server) admitRunner(e *streams.Envelope, id desktop.RunnerIdentity) *refusal {
	switch e.Type {
	case streams.TypeSessionChunk, streams.TypeSessionControl, streams.TypeSessionEnd, streams.TypeSessionUsage:
		return nil
	case streams.TypeSessionStart:
	default:
		return &refusal{http.StatusForbidden, CodeForbidden,
			"a runner token records only session envelopes (session.start, session.chunk, session.control, session.end, session.usage)"}
	}
	if e.TaskID == "" {
		return &refusal{http.StatusBadRequest, streams.ReasonMissingField,
			"taskId is required: a runner token records a session only for a task it holds"}
	}
	e.WorkerID = id.RunnerID
	return nil
}

// linkRunner links a runner's session.start to the task it names, which
// the runner must hold now (desktop.Service.LinkSession): the link is in
// the tasks log before the start is published, so remoteSession.read knows
// the task's session before the recorder projects it.
func (s *Server) linkRunner(ctx context.Context, e *streams.Envelope, id desktop.RunnerIdentity) *refusal {
	var notHeld *desktop.NotHeldError
	switch err := s.cfg.Desktop.LinkSession(ctx, id, e.TaskID, e.SessionID); {
	case errors.Is(err, desktop.ErrUnknownTask):
		return &refusal{http.StatusNotFound, CodeUnknownTask, "task not found"}
	case errors.As(err, &notHeld):
		return &refusal{http.StatusConflict, CodeTaskNotHeld, "task " + e.TaskID + " is " + notHeld.State +
			" and not held by this runner: record a session only for a task this runner claimed and still holds"}
	case errors.Is(err, desktop.ErrSessionLinked):
		return &refusal{http.StatusConflict, CodeSessionExists,
			"session id " + e.SessionID + " is taken by another owner: start the session under a new id"}
	case err != nil:
		s.log.Error("link runner's session failed", "err", err)
		return &refusal{http.StatusServiceUnavailable, CodeUnavailable, "could not link the session to the task; retry"}
	}
	return nil
}

// runnerSessions are the sessions of envs (other than starts) this runner
// may write to: those linked to it when it sent their start for a task it
// held (desktop.Service.RunnerSessions). The link is stored before the
// start is published, so this holds from the first chunk on, before the
// recorder has projected anything; any other session, another runner's of
// the same member included, gets the answer of a session never started.
func (s *Server) runnerSessions(ctx context.Context, envs []*streams.Envelope, id desktop.RunnerIdentity) (map[string]bool, error) {
	var ids []string
	for _, e := range envs {
		if e != nil && e.SessionID != "" && e.Type != streams.TypeSessionStart {
			ids = append(ids, e.SessionID)
		}
	}
	if len(ids) == 0 {
		return map[string]bool{}, nil
	}
	return s.cfg.Desktop.RunnerSessions(ctx, id, ids)
}

// runnerMaySee: a runner token reads only the sessions that runner recorded
// for a task; any other is the one answer of a session that does not exist.
func runnerMaySee(r *http.Request, workerID, taskID string) bool {
	id, ok := runnerCaller(r)
	return !ok || (workerID == id.RunnerID && taskID != "")
}
