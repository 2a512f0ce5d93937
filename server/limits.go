package server

import (
	"cmp"
	"net/http"
	"strconv"
	"time"

	"github.com/spinehq/spine/telemetry"
)

// Limits bound what requests may cost the process. The zero value of every
// field means its default; a negative value turns that limit off.
type Limits struct {
	// BodyMinRate is the average a request body must keep, in bytes per
	// second of time spent waiting on the client, once BodyGrace has been
	// spent; 0 means DefaultBodyMinRate.
	BodyMinRate int64
	// BodyGrace is the waiting time every body gets before the rate counts;
	// 0 means DefaultBodyGrace.
	BodyGrace time.Duration
	// InflightBytes is the process-wide budget of request bodies being
	// read or handled, weighted by what decoding them costs (see
	// bodyCost); 0 means DefaultInflightBytes.
	InflightBytes int64
	// OrgBytesPerSec and OrgEnvelopesPerSec are each org's ingest quota;
	// 0 means DefaultOrgBytesPerSec and DefaultOrgEnvelopesPerSec.
	OrgBytesPerSec     float64
	OrgEnvelopesPerSec float64
}

// Defaults of Limits.
const (
	DefaultBodyMinRate        = 16 << 10
	DefaultBodyGrace          = 10 * time.Second
	DefaultInflightBytes      = 256 << 20
	DefaultOrgBytesPerSec     = 2 << 20
	DefaultOrgEnvelopesPerSec = 5000
	// QuotaBurst is how many seconds of its quota an idle org saves up.
	QuotaBurst = 4
)

// WithDefaults fills the zero fields with their defaults; negative ones
// (off) stay negative.
func (l Limits) WithDefaults() Limits {
	l.BodyMinRate = cmp.Or(l.BodyMinRate, DefaultBodyMinRate)
	l.BodyGrace = cmp.Or(l.BodyGrace, DefaultBodyGrace)
	l.InflightBytes = cmp.Or(l.InflightBytes, DefaultInflightBytes)
	l.OrgBytesPerSec = cmp.Or(l.OrgBytesPerSec, DefaultOrgBytesPerSec)
	l.OrgEnvelopesPerSec = cmp.Or(l.OrgEnvelopesPerSec, DefaultOrgEnvelopesPerSec)
	return l
}

// Weights of a body in the in-flight budget. Ingest holds a batch about
// five times over at its peak (the body, the split items, the decoded
// envelopes, their encoding for the log, the log client's buffer), desktop
// bodies about three (the body, the decoded value, its encoding). An upload
// streams through a piece buffer, so it weighs the same whatever its size.
const (
	ingestCost  = 5
	desktopCost = 3
	uploadCost  = 4 << 20
	// An OTLP export is held as its bytes, its decoded messages, their
	// events' attributes and the envelopes made of them; a hook as its
	// bytes, its decoded fields and one envelope.
	otlpCost = 8
	hookCost = 4
)

// bodyCost is how a route's body weighs: per byte up to limit, or a fixed
// weight (per = 0).
func bodyCost(path string) (per, limit, fixed int64) {
	switch {
	case path == "/v1/ingest":
		return ingestCost, MaxIngestBytes + 1, 0
	case path == "/v1/library/uploads":
		return 0, 0, uploadCost
	case path == "/otlp/v1/logs", path == "/otlp/v1/metrics":
		return otlpCost, telemetry.DefaultMaxBytes + 1, 0
	case path == "/v1/hooks/claude-code":
		return hookCost, telemetry.MaxHookBytes + 1, 0
	}
	return desktopCost, maxDesktopBody + 1, 0
}

// refuse429 answers a request spine will not take now, with when to
// retry, in its route's words (refuseIn).
func refuse429(w http.ResponseWriter, r *http.Request, code, msg string, after time.Duration) {
	secs := max(int64((after+time.Second-1)/time.Second), 1)
	w.Header().Set("Retry-After", strconv.FormatInt(secs, 10))
	refuseIn(w, r, http.StatusTooManyRequests, code, msg)
}
