package importer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/maphash"
	"net/http"
	"net/url"
	"time"

	"github.com/spinehq/spine/apps"
	"github.com/spinehq/spine/streams"
)

// API is spine's HTTP API as HTTPSink calls it: Do sends one request with
// a JSON body (nil for none) and decodes the JSON answer into out. An error
// answer is returned as an error with a method HTTPStatus() int, the
// answer's status, so a 404 can be told from a failure.
type API interface {
	Do(ctx context.Context, method, path string, body []byte, out any) error
}

// HTTPSink publishes through POST /v1/ingest in batches. Starts go without
// an owner: spine makes the token's member the owner.
type HTTPSink struct {
	c       API
	batch   int
	pending []json.RawMessage
	size    int
	stats   SinkStats
	// recorded holds, by a hash of its id, every session of the caller
	// spine had when the import first asked (nil until then): only those
	// are asked about one by one, so a fresh import asks once per 5,000
	// recorded sessions rather than once per imported session.
	recorded map[uint64]struct{}
	seed     maphash.Seed
	// byID: each session is asked about by its id, the list no longer
	// read (AskEach).
	byID bool
}

// NewHTTPSink returns a sink posting batch envelopes a request (at least 1).
func NewHTTPSink(api API, batch int) *HTTPSink { return &HTTPSink{c: api, batch: max(batch, 1)} }

// maxBatchBytes keeps one request well under the server's 32 MiB limit.
const maxBatchBytes = 16 << 20

// Recorded asks spine's projection. Envelopes still in the batch belong to
// other sessions (a session is asked about before its first envelope), so
// the batch is not sent first: an import posts a batch per --batch
// envelopes, not one per session.
func (h *HTTPSink) Recorded(ctx context.Context, sessionID string) (apps.Recorded, error) {
	if h.recorded == nil && !h.byID {
		if err := h.listRecorded(ctx); err != nil {
			return apps.Recorded{}, err
		}
	}
	if !h.byID {
		if _, ok := h.recorded[maphash.String(h.seed, sessionID)]; !ok {
			return apps.Recorded{}, nil
		}
	}
	return AskRecorded(ctx, h.c, sessionID)
}

// AskRecorded is what spine has of one session (GET /v1/sessions/{id}):
// apps.Recorded{} for a 404 (a session spine does not have, or another
// member's), an error when spine did not answer so.
//
// A session only the apps' own telemetry made (origin telemetry) is
// apps.Recorded{} too: no door's start is recorded, so the door asking
// sends its own, which spine applies over the telemetry's
// (docs/recording.md#telemetry-sessions), with its chunks and end. The
// log says the same (it holds no start of it: JetStreamSink.Recorded).
// Its kind run is not spine run's: taken for it, spine collect would
// leave the session alone (apps.Options.LeaveRun) and it would keep no
// transcript.
func AskRecorded(ctx context.Context, api API, sessionID string) (apps.Recorded, error) {
	var s struct {
		Kind      string         `json:"kind"`
		LastSeq   int64          `json:"lastSeq"`
		EndedAt   *time.Time     `json:"endedAt"`
		Usage     *streams.Usage `json:"usage"`
		TotalCost *float64       `json:"totalCost"`
		Origin    string         `json:"origin"`
	}
	err := api.Do(ctx, http.MethodGet, "/v1/sessions/"+url.PathEscape(sessionID), nil, &s)
	var se interface{ HTTPStatus() int }
	if errors.As(err, &se) && se.HTTPStatus() == http.StatusNotFound {
		return apps.Recorded{}, nil
	}
	if err != nil || s.Origin == originTelemetry {
		return apps.Recorded{}, err
	}
	// The end's usage, or a running session's so far.
	return apps.Recorded{Started: true, Ended: s.EndedAt != nil, LastSeq: s.LastSeq, Kind: s.Kind,
		Usage: s.Usage, Cost: s.TotalCost}, nil
}

// originTelemetry is recorder.OriginTelemetry (the recorder imports this
// package): a session no door started.
const originTelemetry = "telemetry"

// AskEach makes every later Recorded ask spine about the session itself,
// not the list read at the first: a long-running caller (spine collect,
// once its start-up replay is done) must see sessions started since.
func (h *HTTPSink) AskEach() { h.byID = true }

// listRecorded pages through GET /v1/sessions once.
func (h *HTTPSink) listRecorded(ctx context.Context) error {
	h.seed, h.recorded = maphash.MakeSeed(), map[uint64]struct{}{}
	for after := ""; ; {
		var page struct { // GET /v1/sessions, as far as the import needs it
			Sessions []struct {
				ID string `json:"id"`
			} `json:"sessions"`
			Next string `json:"next"`
			More bool   `json:"more"`
		}
		if err := h.c.Do(ctx, http.MethodGet, "/v1/sessions?limit=5000&after="+url.QueryEscape(after), nil, &page); err != nil {
			return fmt.Errorf("list recorded sessions: %w", err)
		}
		for _, m := range page.Sessions {
			h.recorded[maphash.String(h.seed, m.ID)] = struct{}{}
		}
		if !page.More {
			return nil
		}
		after = page.Next
	}
}

// Publish adds e to the batch, posting the batch when it is full.
func (h *HTTPSink) Publish(ctx context.Context, e *streams.Envelope) error {
	c := *e
	c.Owner = nil
	data, err := c.Marshal()
	if err != nil {
		return err
	}
	if h.size+len(data) > maxBatchBytes {
		if err := h.flush(ctx); err != nil {
			return err
		}
	}
	h.pending, h.size = append(h.pending, data), h.size+len(data)
	if len(h.pending) >= h.batch {
		return h.flush(ctx)
	}
	return nil
}

// Flush posts what is left of the batch.
func (h *HTTPSink) Flush(ctx context.Context) (SinkStats, error) {
	err := h.flush(ctx)
	return h.stats, err
}

func (h *HTTPSink) flush(ctx context.Context) error {
	if len(h.pending) == 0 {
		return nil
	}
	body, _ := json.Marshal(h.pending)
	var resp streams.IngestResponse
	if err := h.c.Do(ctx, http.MethodPost, "/v1/ingest", body, &resp); err != nil {
		return err
	}
	for _, r := range resp.Results {
		switch {
		case r.Status == http.StatusAccepted && r.Duplicate:
			h.stats.Duplicates++
		case r.Status >= 500:
			return fmt.Errorf("spine could not store envelope %s (%d): run the import again", r.ID, r.Status)
		case r.Status != http.StatusAccepted && r.Error != nil:
			h.stats.Refused = append(h.stats.Refused, Refusal{ID: r.ID, Code: r.Error.Code, Reason: r.Error.Message})
		}
	}
	h.pending, h.size = h.pending[:0], 0
	return nil
}

// Drop discards the envelopes a failed post left in the batch and says
// how many there were: a caller that gives up on them (spine run) counts
// them lost instead of sending them with the next.
func (h *HTTPSink) Drop() int {
	n := len(h.pending)
	h.pending, h.size = h.pending[:0], 0
	return n
}
