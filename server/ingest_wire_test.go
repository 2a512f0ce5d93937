package server

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/spinehq/spine/auth"
	"github.com/spinehq/spine/streams"
)

// The answer to POST /v1/ingest is the wire contract importers and
// `spine publish` decode: these are its bytes, field for field, so moving
// or renaming the Go types behind it cannot change what a producer reads.
func TestIngestAnswerBytes(t *testing.T) {
	full := streams.IngestResponse{Accepted: 2, Refused: 1, Results: []streams.IngestResult{
		{Index: 0, ID: "e1", Status: http.StatusAccepted, Seq: 7},
		{Index: 1, ID: "e2", Status: http.StatusAccepted, Duplicate: true, Seq: 7},
		{Index: 2, Status: http.StatusBadRequest, Error: &streams.ErrorDetail{Code: "malformed_json", Message: "bad"}},
	}}
	rec := httptest.NewRecorder()
	writeJSON(rec, http.StatusMultiStatus, full)
	want := `{"accepted":2,"refused":1,"results":[{"index":0,"id":"e1","status":202,"seq":7},` +
		`{"index":1,"id":"e2","status":202,"duplicate":true,"seq":7},` +
		`{"index":2,"status":400,"error":{"code":"malformed_json","message":"bad"}}]}` + "\n"
	if got := rec.Body.String(); got != want {
		t.Fatalf("ingest answer\n got %s\nwant %s", got, want)
	}

	// The handler itself: a batch refused envelope by envelope, before
	// anything reaches the log or PostgreSQL.
	s := New(Config{})
	req := httptest.NewRequest(http.MethodPost, "/v1/ingest", strings.NewReader(`[{"v":1},"x"]`))
	req = req.WithContext(context.WithValue(req.Context(), ctxKey{}, auth.Claims{Org: "o", Member: "m"}))
	rec = httptest.NewRecorder()
	s.ingest(rec, req)
	if rec.Code != http.StatusMultiStatus {
		t.Fatalf("status %d: %s", rec.Code, rec.Body)
	}
	want = `{"accepted":0,"refused":2,"results":[{"index":0,"status":400,"error":{"code":"unknown_type","message":"type \"\""}},` +
		`{"index":1,"status":400,"error":{"code":"wrong_field_type","message":"field \"\": got JSON \"\\\"x\\\"\", want streams.Envelope"}}]}` + "\n"
	if got := rec.Body.String(); got != want {
		t.Fatalf("ingest answer for a refused batch\n got %s\nwant %s", got, want)
	}
}
