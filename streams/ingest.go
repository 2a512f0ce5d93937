package streams

// The answer to a batch of envelopes posted to spine's HTTP ingest
// (POST /v1/ingest, a 207): one result per envelope, in order. It is wire
// contract, like the envelopes themselves, so producers (the importer,
// spine publish) decode it without depending on the HTTP server that
// writes it.

// IngestResponse is the body of a 207 from POST /v1/ingest.
type IngestResponse struct {
	Accepted int            `json:"accepted"`
	Refused  int            `json:"refused"`
	Results  []IngestResult `json:"results"`
}

// IngestResult is the outcome for one envelope of a batch, in order.
type IngestResult struct {
	Index     int          `json:"index"`
	ID        string       `json:"id,omitempty"`
	Status    int          `json:"status"` // 202 accepted, 4xx refused, 503 not stored
	Duplicate bool         `json:"duplicate,omitempty"`
	Seq       uint64       `json:"seq,omitempty"`
	Error     *ErrorDetail `json:"error,omitempty"`
}

// ErrorDetail says what went wrong: a stable code and a message for
// people. It is the error of one envelope in an IngestResult and of every
// HTTP error body spine writes ({"error":{"code","message"}}).
type ErrorDetail struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}
