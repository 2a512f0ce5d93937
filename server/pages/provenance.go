package pages

import (
	"encoding/json"
	"strconv"

	"github.com/spinehq/spine/accounting"
	"github.com/spinehq/spine/recorder"
	"github.com/spinehq/spine/trace"
)

// ProvenanceView is the provenance page (/ui/provenance/{id}): the search
// form, and what the id traced to, as GET /v1/provenance/{id} answers:
// exactly one of File, Session and Plan, or none on the form alone.
type ProvenanceView struct {
	ID      string
	File    *FileTrace
	Session *trace.Session
	Plan    *trace.Plan
}

// FileTrace is a file's trace and whether the viewer may read its bytes
// (trace.CanRead): only then does the page link them.
type FileTrace struct {
	*trace.File
	Readable bool
}

// producer is an artifact's producedBy stamp, nil when it has none (a
// person uploaded it, or its session has not ended).
func producer(raw json.RawMessage) *recorder.ProducedBy {
	var p *recorder.ProducedBy
	if json.Unmarshal(raw, &p) != nil {
		return nil
	}
	return p
}

// reportedCost is a call's cost as the app reported it, "" when it
// reported none (never $0 for "unknown").
func reportedCost(c *accounting.Call) string {
	if c == nil || c.TotalCost == nil {
		return ""
	}
	return accounting.FormatDollars(json.Number(strconv.FormatFloat(*c.TotalCost, 'f', -1, 64)))
}
