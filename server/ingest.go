package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"slices"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/spinehq/spine/desktop"
	"github.com/spinehq/spine/streams"
)

// Ingest limits.
const (
	MaxIngestBytes = 32 << 20
	MaxIngestItems = 5000
)

// ingest publishes a batch of envelopes: a JSON array, {"envelopes": [...]},
// or one envelope per line. Each gets its own result; one bad envelope
// refuses only itself.
func (s *Server) ingest(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxIngestBytes))
	if err != nil {
		writeError(w, http.StatusRequestEntityTooLarge, CodeTooLarge, "body over 32 MiB: split the batch")
		return
	}
	items, err := splitBatch(body)
	if err != nil {
		writeError(w, http.StatusBadRequest, CodeBadRequest, err.Error())
		return
	}
	if len(items) > MaxIngestItems {
		writeError(w, http.StatusRequestEntityTooLarge, CodeTooLarge, "more than 5000 envelopes: split the batch")
		return
	}
	countEnvelopes(r.Context(), len(items))
	opts := &streams.PublishOpts{Caller: owner(r)}
	runner, isRunner := runnerCaller(r)
	if isRunner {
		opts.Runner = runner.RunnerID
	}
	resp := streams.IngestResponse{Results: make([]streams.IngestResult, len(items))}
	envs := make([]*streams.Envelope, len(items))
	for i, raw := range items {
		res := &resp.Results[i]
		res.Index = i
		e, rej := s.admit(raw, opts)
		if e != nil {
			res.ID = e.ID
		}
		if rej == nil && isRunner {
			if rej = s.admitRunner(e, runner); rej != nil {
				s.m.ingested.WithLabelValues(e.Type, "rejected").Inc()
			}
		}
		if rej != nil {
			res.Status, res.Error = rej.status, &streams.ErrorDetail{Code: rej.code, Message: rej.msg}
			continue
		}
		envs[i] = e
	}
	held, err := s.holders(r.Context(), envs, opts)
	if err != nil {
		s.log.Error("read session owners failed", "err", err)
		writeError(w, http.StatusServiceUnavailable, CodeUnavailable, "session owners unavailable; nothing was stored, retry the batch")
		return
	}
	var mine map[string]bool // a runner's: the sessions it may write to
	if isRunner {
		if mine, err = s.runnerSessions(r.Context(), envs, runner); err != nil {
			s.log.Error("read session workers failed", "err", err)
			writeError(w, http.StatusServiceUnavailable, CodeUnavailable, "sessions unavailable; nothing was stored, retry the batch")
			return
		}
	}
	futures := make([]jetstream.PubAckFuture, len(items))
	refused := map[string]*refusal{} // a runner's starts refused in this batch, by session
	for i, e := range envs {
		res := &resp.Results[i]
		if e == nil {
			continue
		}
		rej := s.checkHolder(e, held, opts)
		if rej == nil && isRunner {
			rej = s.checkRunner(r, e, runner, mine, refused)
		}
		if rej != nil {
			res.Status, res.Error = rej.status, &streams.ErrorDetail{Code: rej.code, Message: rej.msg}
			continue
		}
		f, err := s.cfg.Publisher.PublishAsync(e, opts)
		if _, ok := streams.AsRejection(err); ok { // over a bound once its secrets are redacted
			s.m.ingested.WithLabelValues(e.Type, "rejected").Inc()
			rej := refuse(err)
			res.Status, res.Error = rej.status, &streams.ErrorDetail{Code: rej.code, Message: rej.msg}
			continue
		}
		if err != nil {
			res.Status, res.Error = http.StatusServiceUnavailable, &streams.ErrorDetail{Code: CodeUnavailable, Message: err.Error()}
			continue
		}
		futures[i] = f
		s.m.ingested.WithLabelValues(e.Type, "accepted").Inc()
	}
	s.await(r, futures, &resp)
	writeJSON(w, http.StatusMultiStatus, resp)
}

// checkRunner links a runner's start to its task (then the session is the
// runner's for the rest of the batch) and refuses anything else for a
// session that is not the runner's. A start it refuses refuses the rest of
// its session in the batch too, with the start's code: what follows a
// start spine did not take is never recorded under another start (one an
// earlier batch linked) or told apart from it.
func (s *Server) checkRunner(r *http.Request, e *streams.Envelope, runner desktop.RunnerIdentity, mine map[string]bool,
	refused map[string]*refusal) *refusal {
	if e.Type != streams.TypeSessionStart {
		if rej := refused[e.SessionID]; rej != nil {
			s.m.ingested.WithLabelValues(e.Type, "rejected").Inc()
			return &refusal{rej.status, rej.code, "the start of session " + e.SessionID + " in this batch was refused: " + rej.msg}
		}
		if !mine[e.SessionID] {
			return s.noStart(e)
		}
		return nil
	}
	if rej := s.linkRunner(r.Context(), e, runner); rej != nil {
		s.m.ingested.WithLabelValues(e.Type, "rejected").Inc()
		refused[e.SessionID] = rej
		return rej
	}
	delete(refused, e.SessionID)
	mine[e.SessionID] = true
	return nil
}

func (s *Server) await(r *http.Request, futures []jetstream.PubAckFuture, resp *streams.IngestResponse) {
	for i, f := range futures {
		res := &resp.Results[i]
		if f != nil {
			select {
			case ack := <-f.Ok():
				res.Status, res.Seq, res.Duplicate = http.StatusAccepted, ack.Sequence, ack.Duplicate
			case err := <-f.Err():
				res.Status, res.Error = http.StatusServiceUnavailable, &streams.ErrorDetail{Code: CodeUnavailable, Message: "not stored: " + err.Error()}
			case <-r.Context().Done():
				res.Status, res.Error = http.StatusServiceUnavailable, &streams.ErrorDetail{Code: CodeUnavailable, Message: "request ended before the log acknowledged"}
			}
		}
		if res.Status == http.StatusAccepted {
			resp.Accepted++
		} else {
			resp.Refused++
		}
	}
}

type refusal struct {
	status int
	code   string
	msg    string
}

// admit decodes and validates one envelope for the caller. A start with no
// owner is the caller's; a start for someone else is refused.
func (s *Server) admit(raw json.RawMessage, opts *streams.PublishOpts) (*streams.Envelope, *refusal) {
	e, err := streams.Decode(raw)
	if err != nil {
		var rej *streams.Rejection
		if errors.As(err, &rej) && rej.Reason == streams.ReasonMissingField && isOwnerless(raw) {
			return s.admitOwnerless(raw, opts)
		}
		s.m.ingested.WithLabelValues(typeOf(raw), "rejected").Inc()
		return partial(raw), refuse(err)
	}
	if e.Type == streams.TypeSessionStart && *e.Owner != opts.Caller {
		s.m.ingested.WithLabelValues(e.Type, "rejected").Inc()
		return e, &refusal{http.StatusForbidden, CodeForbidden, "owner must be the token's org and member"}
	}
	return e, nil
}

// admitOwnerless fills a start's missing owner from the verified caller.
func (s *Server) admitOwnerless(raw json.RawMessage, opts *streams.PublishOpts) (*streams.Envelope, *refusal) {
	var m map[string]any
	_ = json.Unmarshal(raw, &m)
	m["owner"] = map[string]string{"org": opts.Caller.Org, "member": opts.Caller.Member}
	filled, _ := json.Marshal(m)
	e, err := streams.Decode(filled)
	if err != nil {
		s.m.ingested.WithLabelValues(typeOf(raw), "rejected").Inc()
		return partial(raw), refuse(err)
	}
	return e, nil
}

func isOwnerless(raw json.RawMessage) bool {
	var probe struct {
		Type  string          `json:"type"`
		Owner json.RawMessage `json:"owner"`
	}
	return json.Unmarshal(raw, &probe) == nil && probe.Type == streams.TypeSessionStart &&
		(len(probe.Owner) == 0 || string(probe.Owner) == "null")
}

func refuse(err error) *refusal {
	var rej *streams.Rejection
	if errors.As(err, &rej) {
		status := http.StatusBadRequest
		if rej.Reason == streams.ReasonTooLarge {
			status = http.StatusRequestEntityTooLarge
		}
		return &refusal{status, rej.Reason, rej.Detail}
	}
	return &refusal{http.StatusBadRequest, CodeBadRequest, err.Error()}
}

// partial recovers the id of an envelope that failed validation, for the result.
func partial(raw json.RawMessage) *streams.Envelope {
	var p struct {
		ID string `json:"id"`
	}
	if json.Unmarshal(raw, &p) != nil || !streams.ValidID(p.ID) {
		return nil
	}
	return &streams.Envelope{ID: p.ID}
}

func typeOf(raw json.RawMessage) string {
	var p struct {
		Type string `json:"type"`
	}
	if json.Unmarshal(raw, &p) == nil && slices.Contains(streams.Types, p.Type) {
		return p.Type
	}
	return "unknown"
}

// splitBatch accepts a JSON array, {"envelopes": [...]}, or JSON lines.
func splitBatch(body []byte) ([]json.RawMessage, error) {
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) == 0 {
		return nil, errors.New("empty body: send a JSON array of envelopes")
	}
	if trimmed[0] == '[' {
		var items []json.RawMessage
		if err := json.Unmarshal(trimmed, &items); err != nil {
			return nil, errors.New("body is not a JSON array of envelopes: " + err.Error())
		}
		return items, nil
	}
	var wrapped struct {
		Envelopes []json.RawMessage `json:"envelopes"`
	}
	if json.Unmarshal(trimmed, &wrapped) == nil && wrapped.Envelopes != nil {
		return wrapped.Envelopes, nil
	}
	var items []json.RawMessage
	for _, line := range bytes.Split(trimmed, []byte("\n")) {
		if line = bytes.TrimSpace(line); len(line) > 0 {
			items = append(items, json.RawMessage(line))
		}
	}
	return items, nil
}
