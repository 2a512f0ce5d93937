package bench

import "github.com/spinehq/spine/streams"

// RawTuning is how the raw baseline was tuned, for raw's sake and not
// spine's (issue 17's honest baseline). It encodes as the JSON's rawTuning.
type RawTuning struct {
	// FetchBatch is how many messages one fetch asks for: one COPY each.
	FetchBatch int `json:"fetchBatch"`
	// PublishWindow is how many async publishes may await their ack.
	PublishWindow int `json:"publishWindow"`
	// MaxAckPending is the consumer's: fetched batches not yet acked.
	MaxAckPending int `json:"maxAckPending"`
	// Pipeline is how many fetched, decoded batches may wait for the COPY
	// goroutine: the next fetch and decode overlap this batch's COPY.
	Pipeline int `json:"pipeline"`
	// Decoder is what reads an envelope's columns.
	Decoder string `json:"decoder"`
}

// rawTuned is the ingest baseline's tuning, the fastest of the sweeps in
// docs/performance.md ("Ingest").
var rawTuned = RawTuning{FetchBatch: 1000, PublishWindow: 8192, MaxAckPending: 4000, Pipeline: 2,
	Decoder: "fastjson (spine's own decoder), the five columns only, no validation"}

// rawOTLPTuning is the OTLP baseline's: fetches of the projector's batch.
var rawOTLPTuning = RawTuning{FetchBatch: streams.DefaultBatchSize, PublishWindow: 4000,
	MaxAckPending: streams.DefaultBatchSize * 4, Pipeline: 2, Decoder: "encoding/json"}
