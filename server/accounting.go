package server

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/spinehq/spine/accounting"
	"github.com/spinehq/spine/auth"
	"github.com/spinehq/spine/streams"
)

// Who sees what: an org admin sees the org's whole cost summary, every plan's
// spend and budget, and sets budgets; a member sees their own calls only,
// in the summary and in a plan's spend, and sets no budget. Which plan a
// session carries is the producer's word, so carrying one earns a member no
// one else's calls. A plan without a call of the member is the same 404 as
// one that does not exist.
func (s *Server) accountingRoutes() {
	s.mux.Handle("GET /v1/cost/summary", s.authed(s.costSummary))
	s.mux.Handle("GET /v1/plans/{id}/spend", s.authed(s.planSpend))
	s.mux.Handle("POST /v1/plans/{id}/budget", s.authed(s.setBudget))
	s.mux.Handle("GET /ui/cost", s.authedPage(s.costPage))
}

// summaryScope is the member whose calls a summary counts: "" (the whole
// org) for an admin, else the caller.
func summaryScope(c auth.Claims) string {
	if c.IsAdmin() {
		return ""
	}
	return c.Member
}

func (s *Server) summary(w http.ResponseWriter, r *http.Request) (*accounting.Summary, bool) {
	q, err := accounting.ParseSummaryQuery(r.URL.Query(), time.Now())
	if err != nil {
		writeError(w, http.StatusBadRequest, CodeBadRequest, err.Error())
		return nil, false
	}
	q.Member = summaryScope(caller(r))
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

// planSpend answers an admin with the plan's whole spend and budget, a
// member with their own calls on it.
func (s *Server) planSpend(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if !streams.ValidID(id) {
		notFound(w, "plan")
		return
	}
	c := caller(r)
	p, err := accounting.GetPlanSpend(r.Context(), s.cfg.Pool, c.Org, id, summaryScope(c))
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
	DollarCeiling *accounting.Dollars `json:"dollarCeiling"` // metered dollars, a JSON number
	LoopCap       *int64              `json:"loopCap"`       // calls of any billing
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
	if !s.mayWriteBudget(w, r, id) {
		return
	}
	var req BudgetRequest
	if err := decodeStrict(w, r, accounting.MaxBudgetBytes, &req); err != nil {
		code := CodeBadRequest
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			code = streams.ReasonWrongType // "10" for 10: as ingest and the log refuse it
		}
		writeError(w, http.StatusBadRequest, code, err.Error())
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

// mayWriteBudget answers a caller who may not set the plan's budget: 403
// admin_required to a member who may read their spend on the plan, and to
// anyone else the 404 of a plan that does not exist. The answer comes
// before the body is read, so a body's errors tell such a caller nothing.
func (s *Server) mayWriteBudget(w http.ResponseWriter, r *http.Request, id string) bool {
	c := caller(r)
	if c.IsAdmin() {
		return true
	}
	ok, err := accounting.CarriesPlan(r.Context(), s.cfg.Pool, c.Org, id, c.Member)
	switch {
	case err != nil:
		s.internal(w, "plan budget", err)
	case ok:
		writeError(w, http.StatusForbidden, CodeAdminRequired,
			"setting a plan's budget takes an org admin's token (spine token mint --role admin)")
	default:
		notFound(w, "plan")
	}
	return false
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
		return fmt.Errorf("body: %w", err)
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
	q.Member = summaryScope(caller(r))
	sum, err := accounting.Summarize(r.Context(), s.cfg.Pool, caller(r).Org, q)
	if err != nil {
		s.pageFailed(w, "cost page", err)
		return
	}
	title := "Cost · " + sum.Org
	if sum.Member != "" {
		title += " · " + sum.Member
	}
	s.page(w, http.StatusOK, "cost", view(r, "cost", title, accounting.Page{Summary: sum, Measure: measure}.Data()))
}
