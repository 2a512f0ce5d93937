package pages

import (
	"encoding/json"

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
