package streams

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/spinehq/spine/internal/fastjson"
	"io"
	"time"
	"unicode/utf8"
)

// Version is the envelope version this build speaks.
const Version = 1

// Envelope types.
const (
	TypeSessionStart   = "session.start"
	TypeSessionChunk   = "session.chunk"
	TypeSessionControl = "session.control"
	TypeSessionEnd     = "session.end"
	// TypeSessionUsage is a running session's usage so far (usage, and
	// totalCost when the app reports one): the recorder keeps the last on
	// the session row until the end replaces it. It is never counted: the
	// router-call row is the end's.
	TypeSessionUsage     = "session.usage"
	TypeWorkerDisconnect = "worker.disconnect"
	TypeMCPCall          = "mcp.call"
	// TypeSessionTelemetry is one event of an app's own telemetry (OTLP
	// logs, Claude Code's HTTP hooks) as a telemetry door translated it:
	// Telemetry says which (docs/telemetry.md).
	TypeSessionTelemetry = "session.telemetry"
)

// Types lists every envelope type, for metrics and docs.
var Types = []string{TypeSessionStart, TypeSessionChunk, TypeSessionControl,
	TypeSessionEnd, TypeSessionUsage, TypeWorkerDisconnect, TypeMCPCall, TypeSessionTelemetry}

// MaxEnvelopeBytes bounds one message on the wire; limits.go bounds each field.
const MaxEnvelopeBytes = 4 << 20

// Envelope is the wire format, version 1: one JSON object per message, with
// the union of every type's fields. Producers may add fields; these names
// never change. There is deliberately no field that could carry a credential.
type Envelope struct {
	V         int       `json:"v"`
	Type      string    `json:"type"`
	ID        string    `json:"id"`
	At        time.Time `json:"at"`
	SessionID string    `json:"sessionId,omitempty"`

	// session.start (app, appSessionRef, owner and workerId: also
	// session.telemetry)
	App           string `json:"app,omitempty"`
	Kind          string `json:"kind,omitempty"`
	Level         string `json:"level,omitempty"`
	AppSessionRef string `json:"appSessionRef,omitempty"`
	Workspace     string `json:"workspace,omitempty"`
	Owner         *Owner `json:"owner,omitempty"`
	PlanID        string `json:"planId,omitempty"`
	TaskID        string `json:"taskId,omitempty"`
	StepID        string `json:"stepId,omitempty"`
	ParentRunID   string `json:"parentRunId,omitempty"`
	WorkerID      string `json:"workerId,omitempty"`
	Prompt        string `json:"prompt,omitempty"`

	// session.chunk
	Seq    int64  `json:"seq,omitempty"`
	Stream string `json:"stream,omitempty"`
	Text   string `json:"text,omitempty"`
	Event  *Event `json:"event,omitempty"`

	// session.control
	Control string `json:"control,omitempty"`
	Reason  string `json:"reason,omitempty"` // also worker.disconnect

	// session.end (usage and totalCost: also session.usage)
	Status    string     `json:"status,omitempty"` // also mcp.call
	ExitCode  *int       `json:"exitCode,omitempty"`
	Error     string     `json:"error,omitempty"` // also mcp.call
	Model     string     `json:"model,omitempty"`
	Effort    string     `json:"effort,omitempty"`
	Usage     *Usage     `json:"usage,omitempty"`
	TotalCost *float64   `json:"totalCost,omitempty"`
	Billing   string     `json:"billing,omitempty"` // also session.telemetry
	Door      string     `json:"door,omitempty"`
	Artifacts []Artifact `json:"artifacts,omitempty"`
	// SweptSince is set on the sweeper's end only: the stored time it
	// judged the session by (its last envelope's, or its first cancel's).
	// The recorder applies that end only if the time still holds, so an
	// end judged on a lagging projection never ends a session at work.
	SweptSince *time.Time `json:"sweptSince,omitempty"`

	// mcp.call
	CallID     string `json:"callId,omitempty"`
	Server     string `json:"server,omitempty"`
	Tool       string `json:"tool,omitempty"`
	DurationMs *int64 `json:"durationMs,omitempty"`

	// session.telemetry
	Telemetry *Telemetry `json:"telemetry,omitempty"`
}

// Owner is the org and member a session belongs to, and the one owner type
// of spine: every read and write of the recorder, the work spine, desktop
// tasks and the trace is scoped by it, and the server makes it once from
// the verified caller.
type Owner struct {
	Org    string `json:"org"`
	Member string `json:"member"`
}

// Event is a completed action the cockpit normalised (stream=event).
type Event struct {
	Action        string `json:"action"`
	Command       string `json:"command,omitempty"`
	ExitCode      *int   `json:"exitCode,omitempty"`
	Output        string `json:"output,omitempty"`
	Path          string `json:"path,omitempty"`
	Content       string `json:"content,omitempty"`
	ContentDigest string `json:"contentDigest,omitempty"`
	Size          *int64 `json:"size,omitempty"`
	// ContentUnknown: a file_read or file_write whose content the source
	// never carried (an imported edit described only by its path); it
	// excludes content, contentDigest and size.
	ContentUnknown bool   `json:"contentUnknown,omitempty"`
	URL            string `json:"url,omitempty"`
	Status         *int   `json:"status,omitempty"`
	Server         string `json:"server,omitempty"`
	Tool           string `json:"tool,omitempty"`
	CallID         string `json:"callId,omitempty"`
	// Arguments are an mcp_call's arguments as the app sent them (a JSON
	// value, an object for MCP); absent when the source did not say.
	Arguments json.RawMessage `json:"arguments,omitempty"`
	// IsError: the app reported that the mcp_call failed (its result's
	// isError, a failed status). false means it reported no failure.
	IsError bool `json:"isError,omitempty"`
	// NoResult: the call was made but its result never came (the session
	// ended, or the output stops, before it). Only what was asked is known
	// (command, path, url, server, tool, arguments): it excludes output,
	// exitCode, status, isError, content, contentDigest and size, and a
	// file_read or file_write with it is contentUnknown.
	NoResult bool `json:"noResult,omitempty"`
}

// Usage is what the app reported about tokens. Raw is its own report, verbatim.
type Usage struct {
	InputTokens      int64           `json:"inputTokens"`
	OutputTokens     int64           `json:"outputTokens"`
	CacheReadTokens  int64           `json:"cacheReadTokens"`
	CacheWriteTokens int64           `json:"cacheWriteTokens"`
	ReasoningTokens  int64           `json:"reasoningTokens"`
	Raw              json.RawMessage `json:"raw,omitempty"`
}

// Add adds o's counts to u's, count by count. Raw is not touched: a sum
// is no report of the app's, so whoever publishes one sets its Raw.
func (u *Usage) Add(o Usage) {
	u.InputTokens += o.InputTokens
	u.OutputTokens += o.OutputTokens
	u.CacheReadTokens += o.CacheReadTokens
	u.CacheWriteTokens += o.CacheWriteTokens
	u.ReasoningTokens += o.ReasoningTokens
}

// Sub takes o's counts from u's, count by count; Raw is not touched.
func (u *Usage) Sub(o Usage) {
	u.Add(Usage{InputTokens: -o.InputTokens, OutputTokens: -o.OutputTokens, CacheReadTokens: -o.CacheReadTokens,
		CacheWriteTokens: -o.CacheWriteTokens, ReasoningTokens: -o.ReasoningTokens})
}

// SameCounts reports whether u and o hold the same five counts, whatever
// their Raw (a Usage with Raw cannot be compared with ==).
func (u Usage) SameCounts(o Usage) bool {
	return u.InputTokens == o.InputTokens && u.OutputTokens == o.OutputTokens && u.CacheReadTokens == o.CacheReadTokens &&
		u.CacheWriteTokens == o.CacheWriteTokens && u.ReasoningTokens == o.ReasoningTokens
}

// Artifact is a named file a session pushed at its end.
type Artifact struct {
	Name          string `json:"name"`
	Content       string `json:"content,omitempty"`
	ContentDigest string `json:"contentDigest,omitempty"`
	Size          *int64 `json:"size,omitempty"`
}

// Decode parses and validates one envelope. Every failure is a *Rejection
// whose Reason names the rule, so it can be dead-lettered as is.
func Decode(data []byte) (*Envelope, error) {
	if len(data) > MaxEnvelopeBytes {
		return nil, Reject(ReasonTooLarge, "envelope is %d bytes, limit %d", len(data), MaxEnvelopeBytes)
	}
	if !utf8.Valid(data) {
		return nil, Reject(ReasonInvalidUTF8, "envelope is not valid UTF-8")
	}
	var e Envelope
	if err := fastjson.Unmarshal(data, &e); err != nil {
		return nil, decodeError(err)
	}
	if bytes.Contains(data, []byte(`\u0000`)) { // the only way a NUL gets into a decoded string
		sanitize(&e)
	}
	if err := e.Validate(); err != nil {
		return nil, err
	}
	return &e, nil
}

func decodeError(err error) error {
	var te *json.UnmarshalTypeError
	var se *json.SyntaxError
	switch {
	case errors.As(err, &te):
		return Reject(ReasonWrongType, "field %q: got JSON %s, want %s", te.Field, te.Value, te.Type)
	case errors.As(err, &se), errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return Reject(ReasonMalformed, "%v", err)
	default:
		// A field's own decoder refused its value: time.Time, for "at",
		// refuses a number as well as a badly formed time.
		return Reject(ReasonWrongType, "field \"at\": %v", err)
	}
}

// Subject is the subject this envelope is published on.
func (e *Envelope) Subject() string {
	switch e.Type {
	case TypeWorkerDisconnect:
		return WorkerSubject(e.WorkerID)
	case TypeMCPCall:
		return MCPSubject(e.SessionID)
	default:
		return SessionSubject(e.SessionID, e.Type)
	}
}

// Marshal encodes the envelope.
func (e *Envelope) Marshal() ([]byte, error) {
	b, err := fastjson.Marshal(e)
	if err != nil {
		return nil, fmt.Errorf("encode envelope %s: %w", e.ID, err)
	}
	return b, nil
}

// SessionIDs lists the distinct session ids of envs in first-seen order,
// skipping nil envelopes and envelopes without one (projectors preload the
// sessions a batch names with it).
func SessionIDs(envs []*Envelope) []string {
	var ids []string
	seen := map[string]bool{}
	for _, e := range envs {
		if e != nil && e.SessionID != "" && !seen[e.SessionID] {
			seen[e.SessionID] = true
			ids = append(ids, e.SessionID)
		}
	}
	return ids
}
