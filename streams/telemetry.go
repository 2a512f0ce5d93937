package streams

import (
	"slices"
)

// Telemetry kinds, sources and phases (docs/telemetry.md#design-what-the-doors-become).
const (
	TelemetryRequest = "request" // one model request: its usage and cost
	TelemetryTool    = "tool"    // one tool use, before (phase pre) or after (post)
	TelemetryPrompt  = "prompt"  // a prompt the person submitted
	TelemetryEnd     = "end"     // the app said the session ended (hook SessionEnd)

	TelemetryOTLP = "otlp" // from the OTLP/HTTP logs door
	TelemetryHook = "hook" // from Claude Code's HTTP hooks door

	PhasePre  = "pre"
	PhasePost = "post"
)

// Closed value sets of session.telemetry.
var (
	TelemetryKinds   = []string{TelemetryRequest, TelemetryTool, TelemetryPrompt, TelemetryEnd}
	TelemetrySources = []string{TelemetryOTLP, TelemetryHook}
	TelemetryPhases  = []string{PhasePre, PhasePost}
)

// Telemetry is what one session.telemetry says: one event of the app's own
// telemetry, normalised by the door that received it. Which fields are set
// depends on Kind; the prompt's text is never carried, nor stored
// anywhere: PromptDigest is its digest (library.Digest of the redacted
// text) when the app sent it, naming no Library file.
type Telemetry struct {
	Kind   string `json:"kind"`
	Source string `json:"source"`

	// request. RequestID keys the request within its session: a re-sent
	// export of it is the same request (projections keep the first copy).
	RequestID   string   `json:"requestId,omitempty"`
	Model       string   `json:"model,omitempty"`
	Effort      string   `json:"effort,omitempty"`
	QuerySource string   `json:"querySource,omitempty"`
	Usage       *Usage   `json:"usage,omitempty"`
	TotalCost   *float64 `json:"totalCost,omitempty"`  // as reported; nil when not
	DurationMs  *int64   `json:"durationMs,omitempty"` // also tool

	// tool. ToolUseID is the app's id of the tool use (the step's callId).
	ToolUseID string `json:"toolUseId,omitempty"`
	Tool      string `json:"tool,omitempty"`
	Phase     string `json:"phase,omitempty"`
	Success   *bool  `json:"success,omitempty"`
	ErrorType string `json:"errorType,omitempty"`
	// Event is the action a hook's tool use was, as spine collect would
	// record it; nil from OTLP, which never carries the tool's content.
	Event *Event `json:"event,omitempty"`

	// prompt
	PromptID     string `json:"promptId,omitempty"`
	PromptLength *int64 `json:"promptLength,omitempty"`
	PromptDigest string `json:"promptDigest,omitempty"`

	// end
	Reason string `json:"reason,omitempty"`
}

// validateTelemetry checks a session.telemetry: like a start it names the
// app and owner (its first one creates the session), and its kind the
// fields it needs.
func (e *Envelope) validateTelemetry() error {
	if !slices.Contains(Apps, e.App) {
		return Reject(ReasonUnknownApp, "app %q is not one of %v", e.App, Apps)
	}
	if e.Owner == nil {
		return Reject(ReasonMissingField, "owner is required")
	}
	if !ValidOwnerID(e.Owner.Org) || !ValidOwnerID(e.Owner.Member) {
		return Reject(ReasonInvalidID, "owner org and member must be 1-%d letters, digits, '-', '_', '.' or '@'", MaxIDLen)
	}
	if e.WorkerID != "" {
		if err := checkID("workerId", e.WorkerID); err != nil {
			return err
		}
	}
	if err := oneOf(ReasonInvalidField, "billing", e.Billing, BillingSignals); err != nil {
		return err
	}
	t := e.Telemetry
	if t == nil {
		return Reject(ReasonMissingField, "session.telemetry needs telemetry")
	}
	return t.validate()
}

func (t *Telemetry) validate() error {
	if t.Kind == "" {
		return Reject(ReasonMissingField, "telemetry.kind is required")
	}
	if err := oneOf(ReasonInvalidField, "telemetry.kind", t.Kind, TelemetryKinds); err != nil {
		return err
	}
	if err := oneOf(ReasonInvalidField, "telemetry.source", t.Source, TelemetrySources); err != nil {
		return err
	}
	if err := t.checkShapes(); err != nil {
		return err
	}
	if t.Event != nil && t.Kind != TelemetryTool {
		return Reject(ReasonInvalidField, "telemetry.event is a tool's, not a %s's", t.Kind)
	}
	switch t.Kind {
	case TelemetryRequest:
		if t.RequestID == "" {
			return Reject(ReasonMissingField, "a telemetry request needs requestId")
		}
		return checkUsage("telemetry.", t.Usage, t.TotalCost)
	case TelemetryTool:
		if t.ToolUseID == "" {
			return Reject(ReasonMissingField, "a telemetry tool needs toolUseId")
		}
		if err := oneOf(ReasonInvalidField, "telemetry.phase", t.Phase, TelemetryPhases); err != nil {
			return err
		}
		if t.Event != nil {
			return t.Event.validate()
		}
	}
	return nil
}

// checkShapes holds the keys, the digest and the counts to their shapes,
// whatever the kind. Keys are stored as given, never redacted: a redacted
// key could make two requests one.
func (t *Telemetry) checkShapes() error {
	for _, f := range [...]struct{ name, v string }{{"telemetry.requestId", t.RequestID}, {"telemetry.promptId", t.PromptID}} {
		if f.v != "" && !ValidKey(f.v) {
			return Reject(ReasonInvalidID, "%s must be 1-%d letters, digits, '-', '_', ':', '.' or '+'", f.name, MaxNameLen)
		}
	}
	if t.ToolUseID != "" {
		if err := checkID("telemetry.toolUseId", t.ToolUseID); err != nil {
			return err
		}
	}
	if err := checkDigest("telemetry.promptDigest", t.PromptDigest); err != nil {
		return err
	}
	for _, f := range [...]struct {
		name string
		v    *int64
	}{{"telemetry.durationMs", t.DurationMs}, {"telemetry.promptLength", t.PromptLength}} {
		if f.v != nil && (*f.v < 0 || *f.v > MaxTelemetryCount) {
			return Reject(ReasonInvalidField, "%s must be 0 to %d", f.name, int64(MaxTelemetryCount))
		}
	}
	return nil
}

// MaxTelemetryCount bounds a telemetry duration (ms) or prompt length:
// past any real one, and within PostgreSQL's bigint and JSON's exact
// integers.
const MaxTelemetryCount = 1 << 53

// ValidKey reports whether s can key a telemetry request or prompt: 1 to
// MaxNameLen letters, digits, '-', '_', ':', '.' and '+'. Wider than an id
// (Codex's request key holds a timestamp), never part of a subject.
func ValidKey(s string) bool {
	if s == "" || len(s) > MaxNameLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' ||
			c == ':' || c == '.' || c == '+') {
			return false
		}
	}
	return true
}

// checkBounds holds the telemetry's free text to its bounds.
func (t *Telemetry) checkBounds() error {
	for _, b := range [...]bound{
		{"telemetry.model", t.Model, MaxNameLen}, {"telemetry.effort", t.Effort, MaxNameLen},
		{"telemetry.querySource", t.QuerySource, MaxNameLen}, {"telemetry.tool", t.Tool, MaxNameLen},
		{"telemetry.errorType", t.ErrorType, MaxNameLen}, {"telemetry.reason", t.Reason, MaxReasonLen},
		{"telemetry.requestId", t.RequestID, MaxNameLen}, {"telemetry.promptId", t.PromptID, MaxNameLen},
		{"telemetry.toolUseId", t.ToolUseID, MaxIDLen}, {"telemetry.promptDigest", t.PromptDigest, MaxDigestLen},
	} {
		if err := CheckLen(b.field, b.v, b.limit); err != nil {
			return err
		}
	}
	if t.Usage != nil && len(t.Usage.Raw) > MaxUsageRawLen {
		return Reject(ReasonFieldTooLong, "telemetry.usage.raw is %d bytes, limit %d", len(t.Usage.Raw), MaxUsageRawLen)
	}
	if t.Event != nil {
		return t.Event.checkBounds()
	}
	return nil
}
