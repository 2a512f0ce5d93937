package server

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/spinehq/spine/accounting"
	"github.com/spinehq/spine/streams"
)

// Cost reports are org-wide: any member of an org sees its whole summary
// and any of its plans, since finance and platform teams read them.
func (s *Server) accountingRoutes() {
	s.mux.Handle("GET /v1/cost/summary", s.authed(s.costSummary))
	s.mux.Handle("GET /v1/plans/{id}/spend", s.authed(s.planSpend))
	s.mux.Handle("POST /v1/plans/{id}/budget", s.authed(s.setBudget))
	s.mux.Handle("GET /ui/cost", s.authedPage(s.costPage))
}

func (s *Server) summary(w http.ResponseWriter, r *http.Request) (*accounting.Summary, bool) {
	q, err := accounting.ParseSummaryQuery(r.URL.Query(), time.Now())
	if err != nil {
		writeError(w, http.StatusBadRequest, CodeBadRequest, err.Error())
		return nil, false
	}
	sum, err := accounting.Summarize(r.Context(), s.cfg.Pool, caller(r).Org, q)
	if err != nil {
		s.internal(w, "cost summary", err)
		return nil, false
	}
	return sum, true
}

// costSummary writes the summary with Summary.AppendJSON (the bytes
// writeJSON would write, without reflection: a session listing can be a
// row per session).
func (s *Server) costSummary(w http.ResponseWriter, r *http.Request) {
	sum, ok := s.summary(w, r)
	if !ok {
		return
	}
	body, err := sum.AppendJSON(make([]byte, 0, 1024+600*len(sum.Rows)))
	if err != nil {
		s.internal(w, "encode cost summary", err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(body)
}

func (s *Server) planSpend(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if !streams.ValidID(id) {
		notFound(w, "plan")
		return
	}
	p, err := accounting.GetPlanSpend(r.Context(), s.cfg.Pool, caller(r).Org, id)
	if errors.Is(err, accounting.ErrNotFound) {
		notFound(w, "plan")
		return
	}
	if err != nil {
		s.internal(w, "plan spend", err)
		return
	}
	writeJSON(w, http.StatusOK, p)
}

// BudgetRequest sets a plan's whole budget; a null or absent limit is none.
type BudgetRequest struct {
	DollarCeiling *json.Number `json:"dollarCeiling"` // metered dollars
	LoopCap       *int64       `json:"loopCap"`       // calls of any billing
}

// BudgetResponse says the budget event is on the log; GET …/spend shows it
// once the accounting projector has applied it (milliseconds).
type BudgetResponse struct {
	ID     string `json:"id"`
	PlanID string `json:"planId"`
	Seq    uint64 `json:"seq"`
}

func (s *Server) setBudget(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if !streams.ValidID(id) {
		writeError(w, http.StatusBadRequest, CodeBadRequest, "plan id must be 1-128 letters, digits, '-' or '_'")
		return
	}
	var req BudgetRequest
	if err := decodeStrict(w, r, accounting.MaxBudgetBytes, &req); err != nil {
		writeError(w, http.StatusBadRequest, CodeBadRequest, err.Error())
		return
	}
	c := caller(r)
	b := &accounting.Budget{V: 1, Type: accounting.TypePlanBudget, ID: "budget-" + id + "-" + randomHex(8),
		At: time.Now().UTC(), PlanID: id, Org: c.Org, Member: c.Member, DollarCeiling: req.DollarCeiling, LoopCap: req.LoopCap}
	ack, err := accounting.PublishBudget(r.Context(), s.cfg.JS, b)
	if rej, ok := streams.AsRejection(err); ok {
		writeError(w, http.StatusBadRequest, rej.Reason, rej.Detail)
		return
	}
	if err != nil {
		s.internal(w, "publish budget", err)
		return
	}
	writeJSON(w, http.StatusAccepted, BudgetResponse{ID: b.ID, PlanID: id, Seq: ack.Sequence})
}

// decodeStrict reads one JSON object of at most limit bytes, refusing
// unknown fields and trailing data.
func decodeStrict(w http.ResponseWriter, r *http.Request, limit int64, v any) error {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	if err != nil {
		return errors.New("body too large or unreadable")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return errors.New("body: " + err.Error())
	}
	if dec.More() {
		return errors.New("body: trailing data after the JSON object")
	}
	return nil
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func (s *Server) costPage(w http.ResponseWriter, r *http.Request) {
	measure := r.URL.Query().Get("measure")
	if measure == "" {
		measure = "tokens"
	}
	if !slices.Contains(accounting.Measures, measure) {
		writePageError(w, http.StatusBadRequest, "measure must be one of tokens, calls, dollars")
		return
	}
	q, err := accounting.ParseSummaryQuery(r.URL.Query(), time.Now())
	if err != nil {
		writePageError(w, http.StatusBadRequest, err.Error())
		return
	}
	sum, err := accounting.Summarize(r.Context(), s.cfg.Pool, caller(r).Org, q)
	if err != nil {
		s.log.Error("cost page failed", "err", err)
		writePageError(w, http.StatusInternalServerError, "cost summary failed; see the server log")
		return
	}
	var buf bytes.Buffer
	if err := accounting.WritePage(&buf, accounting.Page{Summary: sum, Measure: measure}); err != nil {
		s.log.Error("render cost page", "err", err)
		writePageError(w, http.StatusInternalServerError, "rendering failed; see the server log")
		return
	}
	writeHTML(w, http.StatusOK, buf.Bytes())
}
