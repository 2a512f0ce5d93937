package spine

import (
	"encoding/json"
	"fmt"
	"time"
)

// Run kinds.
const KindSessionRecording = "session_recording"

// Run is one unit of work: a session's recording, for now.
type Run struct {
	ID           string    `json:"id"`
	Kind         string    `json:"kind"`
	Org          string    `json:"-"`
	Member       string    `json:"-"`
	SessionID    string    `json:"sessionId,omitempty"`
	ParentRunID  string    `json:"parentRunId,omitempty"`
	ParentStepID string    `json:"parentStepId,omitempty"`
	CreatedAt    time.Time `json:"createdAt"`
}

// Step sources.
const (
	SourceSession   = "session"   // an event chunk the cockpit sent
	SourceMCP       = "mcp"       // a record from the MCP node
	SourceTelemetry = "telemetry" // a tool use the app's own telemetry reported (docs/telemetry.md)
)

// Step is one completed action in a run.
type Step struct {
	RunID      string          `json:"runId"`
	Idx        int             `json:"idx"`
	ID         string          `json:"id"`
	Action     string          `json:"action"`
	Source     string          `json:"source"`
	SessionSeq *int64          `json:"sessionSeq,omitempty"`
	CallID     string          `json:"callId,omitempty"`
	Detail     json.RawMessage `json:"detail"`
	At         time.Time       `json:"at"`
	// Observations are filled by reads.
	Observations []Observation `json:"observations,omitempty"`
}

// Observation kinds.
const (
	ObsResult  = "result"  // what an action returned
	ObsNote    = "note"    // something the recorder noticed (a hole)
	ObsControl = "control" // a control message the session received
)

// Observation is something observed in a run, about a step or the run itself.
type Observation struct {
	RunID  string          `json:"runId"`
	Idx    int             `json:"idx"`
	StepID string          `json:"stepId,omitempty"`
	Kind   string          `json:"kind"`
	Body   json.RawMessage `json:"body"`
	At     time.Time       `json:"at"`
}

// StepID is a step's id: unique across runs and stable across rebuilds.
func StepID(runID string, idx int) string { return fmt.Sprintf("%s.s%d", runID, idx) }
