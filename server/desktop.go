package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/spinehq/spine/auth"
	"github.com/spinehq/spine/desktop"
	"github.com/spinehq/spine/streams"
)

// Desktop error codes (beyond the shared ones in errors.go).
const (
	CodeUnknownSession = "unknown_session"
	CodeUnknownTask    = "unknown_task"
	CodeUnknownRunner  = "unknown_runner"
	CodeUnknownToken   = "unknown_token"
	CodeAlreadyClaimed = "already_claimed"
	CodeStaleClaim     = "stale_claim"
	CodeNotClaimable   = "not_claimable"
	CodeNotRegistered  = "runner_not_registered"
	CodeNeedsRunner    = "needs_desktop_runner"
	CodeRunnerTaken    = "runner_taken"
)

// maxDesktopBody bounds a runner's or member's request body: what it
// carries is published as one message, which the log takes up to 4 MiB.
const maxDesktopBody = streams.MaxEnvelopeBytes

// desktopRoutes mounts the runner protocol, runner tokens, remote sessions,
// session pages and the MCP endpoint. Without a desktop service none exist.
func (s *Server) desktopRoutes() {
	if s.cfg.Desktop == nil {
		return
	}
	// Member routes: runner tokens are minted only here, never over MCP.
	s.mux.Handle("POST /v1/desktop-runner/tokens", s.authed(s.mintRunnerToken))
	s.mux.Handle("GET /v1/desktop-runner/tokens", s.authed(s.listRunnerTokens))
	s.mux.Handle("DELETE /v1/desktop-runner/tokens/{id}", s.authed(s.revokeRunnerToken))
	// Runner routes: a runner token reads nothing but its own work.
	s.mux.Handle("POST /v1/desktop-runner/register", s.runnerAuthed(s.registerRunner))
	s.mux.Handle("GET /v1/desktop-runner/work", s.runnerAuthed(s.runnerWork))
	s.mux.Handle("GET /v1/desktop-runner/events", s.runnerAuthed(s.runnerEvents))
	s.mux.Handle("POST /v1/desktop-runner/tasks/{id}/claim", s.runnerAuthed(s.claimTask))
	s.mux.Handle("POST /v1/desktop-runner/tasks/{id}/heartbeat", s.runnerAuthed(s.heartbeatTask))
	s.mux.Handle("POST /v1/desktop-runner/tasks/{id}/events", s.runnerAuthed(s.postTaskEvents))
	s.mux.Handle("POST /v1/desktop-runner/tasks/{id}/complete", s.runnerAuthed(s.completeTask))
	s.remoteSessionRoutes()
	s.remotePageRoutes()
	if s.cfg.MCP != nil {
		s.mux.Handle("/mcp", s.cfg.MCP) // bearer-authenticated by the gateway itself
	}
}

type runnerHandler func(w http.ResponseWriter, r *http.Request, id desktop.RunnerIdentity)

// runnerAuthed requires a live runner token (audience spine-runner, not
// revoked). A member token here is a 401, as a runner token is on member routes.
func (s *Server) runnerAuthed(h runnerHandler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tok, ok := auth.BearerToken(r)
		if !ok {
			w.Header().Set("WWW-Authenticate", `Bearer realm="spine-runner"`)
			writeError(w, http.StatusUnauthorized, CodeUnauthorized, "a runner token is required (POST /v1/desktop-runner/tokens as the member)")
			return
		}
		id, ok := s.verifyRunner(w, r, tok, "spine-runner", "invalid runner token: ")
		if !ok {
			return
		}
		h(w, r, id)
	})
}

// verifyRunner verifies tok as a live runner token. When it is not one it
// answers the request (a 401 invalid_token in realm, its message invalid
// and why; a 500 when the check itself failed) and returns false.
func (s *Server) verifyRunner(w http.ResponseWriter, r *http.Request, tok, realm, invalid string) (desktop.RunnerIdentity, bool) {
	id, err := s.cfg.Desktop.VerifyRunner(r.Context(), tok)
	if err == nil {
		return id, true
	}
	if !errors.Is(err, desktop.ErrTokenRevoked) && !isAuthError(err) {
		s.internal(w, "verify runner token", err)
		return id, false
	}
	w.Header().Set("WWW-Authenticate", `Bearer realm="`+realm+`", error="invalid_token"`)
	writeError(w, http.StatusUnauthorized, CodeUnauthorized, invalid+err.Error())
	return id, false
}

func isAuthError(err error) bool {
	for _, e := range []error{auth.ErrMalformed, auth.ErrAlgorithm, auth.ErrSignature, auth.ErrExpired,
		auth.ErrNotYetValid, auth.ErrAudience} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// decodeBody reads a JSON body into v, answering 4xx itself on failure.
func decodeBody(w http.ResponseWriter, r *http.Request, v any) bool {
	body, ok := readBody(w, r)
	return ok && unmarshalBody(w, body, v)
}

// readBody reads a runner's or member's body: at most maxDesktopBody bytes
// of UTF-8. Invalid UTF-8 is refused as ingest refuses it, never silently
// turned into U+FFFD by the JSON decoder.
func readBody(w http.ResponseWriter, r *http.Request) ([]byte, bool) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxDesktopBody))
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		writeError(w, http.StatusRequestEntityTooLarge, CodeTooLarge,
			fmt.Sprintf("body over %d bytes: it must fit in one message of the log; send less at a time (fewer events per post)", maxDesktopBody))
		return nil, false
	case err != nil:
		writeError(w, http.StatusBadRequest, CodeBadRequest, "body could not be read")
		return nil, false
	case !utf8.Valid(body):
		writeError(w, http.StatusBadRequest, streams.ReasonInvalidUTF8, "body is not valid UTF-8")
		return nil, false
	}
	return body, true
}

// unmarshalBody decodes one JSON object; trailing data is refused.
func unmarshalBody(w http.ResponseWriter, body []byte, v any) bool {
	dec := json.NewDecoder(bytes.NewReader(body))
	err := dec.Decode(v)
	if err == nil && dec.More() {
		err = errors.New("trailing data")
	}
	if err != nil {
		writeError(w, http.StatusBadRequest, CodeBadRequest, "body must be a JSON object: "+jsonProblem(err))
		return false
	}
	return true
}

// jsonProblem describes a decoding error without echoing the body.
func jsonProblem(err error) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return fmt.Sprintf("field %s has the wrong type (want %s)", te.Field, te.Type)
	}
	if strings.Contains(err.Error(), "EOF") {
		return "empty or truncated"
	}
	return "malformed JSON"
}

// desktopErrorBody is the error shape with the fields a caller acts on.
type desktopErrorBody struct {
	Error desktopErrorDetail `json:"error"`
}

type desktopErrorDetail struct {
	Code       string `json:"code"`
	Message    string `json:"message"`
	Action     string `json:"action,omitempty"`  // needs_desktop_runner: the human step
	Machine    string `json:"machine,omitempty"` // needs_desktop_runner
	State      string `json:"state,omitempty"`   // stale_claim: the task's state now
	LeaseValid *bool  `json:"leaseValid,omitempty"`
}

// desktopError maps a service error to its one HTTP answer.
func (s *Server) desktopError(w http.ResponseWriter, op string, err error) {
	var needs *desktop.NeedsRunnerError
	var stale *desktop.StaleError
	var inv *desktop.InvalidError
	var rej *streams.Rejection
	switch {
	case errors.Is(err, desktop.ErrUnknownSession):
		writeError(w, http.StatusNotFound, CodeUnknownSession, "remote session not found")
	case errors.Is(err, desktop.ErrUnknownTask):
		writeError(w, http.StatusNotFound, CodeUnknownTask, "task not found")
	case errors.Is(err, desktop.ErrUnknownRunner):
		writeError(w, http.StatusNotFound, CodeUnknownRunner, "runner not found")
	case errors.Is(err, desktop.ErrUnknownToken):
		writeError(w, http.StatusNotFound, CodeUnknownToken, "runner token not found")
	case errors.Is(err, desktop.ErrAlreadyClaimed):
		writeError(w, http.StatusConflict, CodeAlreadyClaimed, "already claimed: another runner holds this task, or it is no longer queued")
	case errors.As(err, &stale):
		f := false
		writeJSON(w, http.StatusConflict, desktopErrorBody{desktopErrorDetail{Code: CodeStaleClaim, State: stale.State, LeaseValid: &f,
			Message: "stale claim: this fencing token no longer holds the task (it is " + stale.State + "); stop work on it"}})
	case errors.Is(err, desktop.ErrNotClaimable):
		writeError(w, http.StatusConflict, CodeNotClaimable, "this runner may not take the task: it is for another machine, of a work kind the runner did not declare, or past its deliverBy")
	case errors.Is(err, desktop.ErrRunnerTaken):
		writeError(w, http.StatusConflict, CodeRunnerTaken, "runnerId is in use by another member: give this machine another persisted id")
	case errors.Is(err, desktop.ErrTooLarge):
		writeError(w, http.StatusRequestEntityTooLarge, CodeTooLarge, err.Error())
	case errors.Is(err, desktop.ErrNotRegistered):
		writeError(w, http.StatusConflict, CodeNotRegistered, "register first: POST /v1/desktop-runner/register")
	case errors.As(err, &needs):
		writeJSON(w, http.StatusConflict, desktopErrorBody{desktopErrorDetail{Code: CodeNeedsRunner, Action: needs.Action,
			Machine: needs.Machine, Message: "no desktop runner is present: " + needs.Action + "; or pass deliverBy to queue until then"}})
	case errors.As(err, &inv):
		writeError(w, http.StatusBadRequest, CodeBadRequest, inv.Msg)
	case errors.As(err, &rej):
		status := http.StatusBadRequest
		if rej.Reason == streams.ReasonTooLarge {
			status = http.StatusRequestEntityTooLarge
		}
		writeError(w, status, rej.Reason, rej.Detail)
	case errors.Is(err, desktop.ErrBusy):
		writeError(w, http.StatusServiceUnavailable, CodeUnavailable, op+": the log did not apply the write in time; retry")
	default:
		s.internal(w, op, err)
	}
}

func (s *Server) mintRunnerToken(w http.ResponseWriter, r *http.Request) {
	var body struct {
		RunnerID string `json:"runnerId"`
	}
	if !decodeBody(w, r, &body) {
		return
	}
	tok, err := s.cfg.Desktop.MintRunnerToken(r.Context(), owner(r), body.RunnerID)
	if err != nil {
		s.desktopError(w, "mint runner token", err)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusCreated, tok)
}

func (s *Server) listRunnerTokens(w http.ResponseWriter, r *http.Request) {
	toks, err := s.cfg.Desktop.RunnerTokens(r.Context(), owner(r))
	if err != nil {
		s.desktopError(w, "list runner tokens", err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"tokens": toks})
}

func (s *Server) revokeRunnerToken(w http.ResponseWriter, r *http.Request) {
	if err := s.cfg.Desktop.RevokeRunnerToken(r.Context(), owner(r), r.PathValue("id")); err != nil {
		s.desktopError(w, "revoke runner token", err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) registerRunner(w http.ResponseWriter, r *http.Request, id desktop.RunnerIdentity) {
	var inv desktop.Inventory
	if !decodeBody(w, r, &inv) {
		return
	}
	reg, err := s.cfg.Desktop.Register(r.Context(), id, inv)
	if err != nil {
		s.desktopError(w, "register runner", err)
		return
	}
	writeJSON(w, http.StatusOK, reg)
}

func (s *Server) runnerWork(w http.ResponseWriter, r *http.Request, id desktop.RunnerIdentity) {
	tasks, err := s.cfg.Desktop.Work(r.Context(), id)
	if err != nil {
		s.desktopError(w, "list work", err)
		return
	}
	if tasks == nil {
		tasks = []desktop.Task{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"tasks": tasks})
}

// claimTask takes no arguments: its body is empty or a JSON object (whose
// fields are ignored); anything else is refused, not claimed anyway.
func (s *Server) claimTask(w http.ResponseWriter, r *http.Request, id desktop.RunnerIdentity) {
	body, ok := readBody(w, r)
	if !ok {
		return
	}
	// null would decode into a struct as if it were {}.
	if b := bytes.TrimSpace(body); len(b) > 0 && b[0] != '{' {
		writeError(w, http.StatusBadRequest, CodeBadRequest, "body must be empty or a JSON object")
		return
	}
	var none struct{}
	if len(bytes.TrimSpace(body)) > 0 && !unmarshalBody(w, body, &none) {
		return
	}
	c, err := s.cfg.Desktop.Claim(r.Context(), id, r.PathValue("id"))
	if err != nil {
		s.desktopError(w, "claim task", err)
		return
	}
	writeJSON(w, http.StatusOK, c)
}

type fencedBody struct {
	Fence  uint64                `json:"fence"`
	Events []desktop.RunnerEvent `json:"events"`
	Status string                `json:"status"`
	Error  string                `json:"error"`
}

func readFenced(w http.ResponseWriter, r *http.Request) (fencedBody, bool) {
	var b fencedBody
	if !decodeBody(w, r, &b) {
		return b, false
	}
	if b.Fence == 0 {
		writeError(w, http.StatusBadRequest, CodeBadRequest, "fence is required: the fencing token the claim returned")
		return b, false
	}
	return b, true
}

func (s *Server) heartbeatTask(w http.ResponseWriter, r *http.Request, id desktop.RunnerIdentity) {
	b, ok := readFenced(w, r)
	if !ok {
		return
	}
	lease, err := s.cfg.Desktop.Heartbeat(r.Context(), id, r.PathValue("id"), b.Fence)
	if err != nil {
		s.desktopError(w, "heartbeat", err)
		return
	}
	writeJSON(w, http.StatusOK, lease)
}

func (s *Server) postTaskEvents(w http.ResponseWriter, r *http.Request, id desktop.RunnerIdentity) {
	b, ok := readFenced(w, r)
	if !ok {
		return
	}
	rec, err := s.cfg.Desktop.PostEvents(r.Context(), id, r.PathValue("id"), b.Fence, b.Events)
	if err != nil {
		s.desktopError(w, "post events", err)
		return
	}
	writeJSON(w, http.StatusOK, rec)
}

func (s *Server) completeTask(w http.ResponseWriter, r *http.Request, id desktop.RunnerIdentity) {
	b, ok := readFenced(w, r)
	if !ok {
		return
	}
	status := b.Status
	if status == "" {
		status = desktop.StateDone
	}
	rec, err := s.cfg.Desktop.Complete(r.Context(), id, r.PathValue("id"), b.Fence, desktop.Completion{Status: status, Error: b.Error})
	if err != nil {
		s.desktopError(w, "complete task", err)
		return
	}
	writeJSON(w, http.StatusOK, rec)
}
