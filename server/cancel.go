package server

import (
	"bytes"
	"cmp"
	"encoding/json"
	"io"
	"net/http"
	"time"
	"unicode/utf8"

	"github.com/spinehq/spine/recorder"
	"github.com/spinehq/spine/streams"
)

// MaxCancelBody bounds the body of POST /v1/sessions/{id}/cancel.
const MaxCancelBody = 64 << 10

// CancelRequest is the optional body of POST /v1/sessions/{id}/cancel.
type CancelRequest struct {
	Reason string `json:"reason"`
}

// CancelResult is the 202 of POST /v1/sessions/{id}/cancel: the control it
// published, and how long the producer has to end the session before
// spine ends it cancelled.
type CancelResult struct {
	SessionID    string  `json:"sessionId"`
	Control      string  `json:"control"`
	ID           string  `json:"id"`
	Seq          uint64  `json:"seq"`
	Duplicate    bool    `json:"duplicate"` // an earlier cancel with this id is already in the log
	Reason       string  `json:"reason,omitempty"`
	GraceSeconds float64 `json:"graceSeconds"`
}

// cancelSession asks a running session's producer to stop: it publishes a
// session.control cancel; if no end follows within the grace, the
// sweeper ends the session cancelled. Only the owner may: anyone else gets
// the 404 of a session that does not exist.
func (s *Server) cancelSession(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if !streams.ValidID(id) {
		notFound(w, "session")
		return
	}
	req, ok := readCancel(w, r)
	if !ok {
		return
	}
	sess, ok := s.callerSession(w, r, id, owner(r))
	if !ok {
		return
	}
	if sess.Ended() {
		writeError(w, http.StatusConflict, CodeSessionEnded, "session already ended with status "+sess.Status)
		return
	}
	s.publishCancel(w, r, id, req.Reason)
}

func (s *Server) publishCancel(w http.ResponseWriter, r *http.Request, id, reason string) {
	e := recorder.CancelControl(id, reason, time.Now())
	ack, err := s.cfg.Publisher.Publish(r.Context(), e, &streams.PublishOpts{Caller: owner(r)})
	if _, ok := streams.AsRejection(err); ok { // the reason breaks an envelope bound
		rf := refuse(err)
		writeError(w, rf.status, rf.code, rf.msg)
		return
	}
	if err != nil {
		s.log.Error("publish cancel failed", "err", err)
		writeError(w, http.StatusServiceUnavailable, CodeUnavailable, "cancel not stored; retry")
		return
	}
	grace := cmp.Or(s.cfg.CancelGrace, recorder.DefaultCancelGrace)
	// The reason as the log keeps it: redacted at the door.
	writeJSON(w, http.StatusAccepted, CancelResult{SessionID: id, Control: e.Control, ID: e.ID, Seq: ack.Sequence,
		Duplicate: ack.Duplicate, Reason: e.Redacted().Reason, GraceSeconds: grace.Seconds()})
}

// readCancel reads the optional body: nothing, or {"reason": "..."}.
func readCancel(w http.ResponseWriter, r *http.Request) (CancelRequest, bool) {
	var req CancelRequest
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxCancelBody))
	if err != nil {
		writeError(w, http.StatusRequestEntityTooLarge, CodeTooLarge, "body over 64 KiB")
		return req, false
	}
	if len(bytes.TrimSpace(body)) == 0 {
		return req, true
	}
	if !utf8.Valid(body) { // the decoder would turn it into U+FFFD silently
		writeError(w, http.StatusBadRequest, streams.ReasonInvalidUTF8, "body is not valid UTF-8")
		return req, false
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil || dec.More() {
		writeError(w, http.StatusBadRequest, CodeBadRequest, `body must be empty or {"reason": "..."}`)
		return req, false
	}
	return req, true
}
