package streams

import (
	"fmt"
	"github.com/spinehq/spine/secrets"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Closed value sets (docs/design.md#envelopes).
var (
	Apps           = []string{"claude-code", "codex"}
	Kinds          = []string{"run", "open", "attach"}
	Levels         = []string{"", "fast", "strong", "reasoning"}
	ChunkStreams   = []string{"stdout", "stderr", "event"}
	Actions        = []string{"command", "file_read", "file_write", "fetch", "mcp_call"}
	Controls       = []string{"cancel", "renew_credential"}
	EndStatuses    = []string{"done", "failed", "cancelled", "disconnected", "timeout"}
	BillingSignals = []string{"", "subscription", "metered"}
	Doors          = []string{"", "app", "session"}
	MCPStatuses    = []string{"ok", "error"}
)

// Validate checks the envelope against the version-1 contract: the fields
// its type needs, closed value sets, and subject-safe ids. Rules that need
// the session's state (sequence, end before start) are the recorder's.
func (e *Envelope) Validate() error {
	if e.V != Version {
		return Reject(ReasonUnknownVersion, "v=%d, this spine speaks v=%d", e.V, Version)
	}
	if !slices.Contains(Types, e.Type) {
		return Reject(ReasonUnknownType, "type %q", e.Type)
	}
	if err := checkID("id", e.ID); err != nil {
		return err
	}
	if e.At.IsZero() {
		return Reject(ReasonMissingField, "at is required")
	}
	// RFC 3339 parsing accepts offsets (+24:00) that encoding refuses; such
	// an envelope could be decoded but never re-published or stored.
	if _, err := e.At.MarshalJSON(); err != nil {
		return Reject(ReasonInvalidField, "at: %v", err)
	}
	if err := CheckTime("at", e.At); err != nil {
		return err
	}
	if err := e.checkBounds(); err != nil {
		return err
	}
	if e.Type != TypeWorkerDisconnect {
		if err := checkID("sessionId", e.SessionID); err != nil {
			return err
		}
	}
	switch e.Type {
	case TypeSessionStart:
		return e.validateStart()
	case TypeSessionChunk:
		return e.validateChunk()
	case TypeSessionControl:
		return oneOf(ReasonInvalidField, "control", e.Control, Controls)
	case TypeSessionEnd:
		return e.validateEnd()
	case TypeSessionUsage:
		if e.Usage == nil {
			return Reject(ReasonMissingField, "session.usage needs usage")
		}
		return checkUsage("", e.Usage, e.TotalCost)
	case TypeWorkerDisconnect:
		return checkID("workerId", e.WorkerID)
	case TypeMCPCall:
		return e.validateMCP()
	case TypeSessionTelemetry:
		return e.validateTelemetry()
	}
	return nil
}

func (e *Envelope) validateStart() error {
	if !slices.Contains(Apps, e.App) {
		return Reject(ReasonUnknownApp, "app %q is not one of %v", e.App, Apps)
	}
	if err := oneOf(ReasonInvalidField, "kind", e.Kind, Kinds); err != nil {
		return err
	}
	if e.Level == "embeddings" {
		return Reject(ReasonEmbeddingsLevel, "level embeddings is refused: an embedding must come from the embedder of the index it is written into")
	}
	if err := oneOf(ReasonInvalidField, "level", e.Level, Levels); err != nil {
		return err
	}
	if e.Kind == "attach" && e.AppSessionRef == "" {
		return Reject(ReasonMissingField, "kind attach needs appSessionRef")
	}
	if e.Owner == nil {
		return Reject(ReasonMissingField, "owner is required")
	}
	if !ValidOwnerID(e.Owner.Org) || !ValidOwnerID(e.Owner.Member) {
		return Reject(ReasonInvalidID, "owner org and member must be 1-%d letters, digits, '-', '_', '.' or '@'", MaxIDLen)
	}
	for _, f := range []struct{ name, v string }{{"planId", e.PlanID}, {"taskId", e.TaskID},
		{"stepId", e.StepID}, {"parentRunId", e.ParentRunID}, {"workerId", e.WorkerID}} {
		if f.v == "" {
			continue
		}
		if err := checkID(f.name, f.v); err != nil {
			return err
		}
	}
	if (e.StepID == "") != (e.ParentRunID == "") && e.ParentRunID != "" {
		return Reject(ReasonMissingField, "parentRunId needs stepId")
	}
	return nil
}

func (e *Envelope) validateChunk() error {
	if err := CheckSeq("seq", e.Seq); err != nil {
		return err
	}
	if err := oneOf(ReasonInvalidField, "stream", e.Stream, ChunkStreams); err != nil {
		return err
	}
	if e.Stream != "event" {
		if e.Event != nil {
			return Reject(ReasonInvalidField, "stream %s carries text, not an event", e.Stream)
		}
		return nil
	}
	if e.Event == nil {
		return Reject(ReasonMissingField, "stream event needs event")
	}
	return e.Event.validate()
}

func (ev *Event) validate() error {
	if !slices.Contains(Actions, ev.Action) {
		return Reject(ReasonUnknownAction, "action %q is not one of %v", ev.Action, Actions)
	}
	// An id and a digest are stored as given, never redacted: their shapes
	// leave no room for free text.
	if ev.CallID != "" {
		if err := checkID("event.callId", ev.CallID); err != nil {
			return err
		}
	}
	if err := checkDigest("event.contentDigest", ev.ContentDigest); err != nil {
		return err
	}
	if ev.NoResult && (ev.Output != "" || ev.ExitCode != nil || ev.Status != nil || ev.IsError || ev.Content != "" ||
		ev.ContentDigest != "" || ev.Size != nil) {
		return Reject(ReasonInvalidField, "noResult excludes output, exitCode, status, isError, content, contentDigest and size")
	}
	if ev.NoResult && (ev.Action == "file_read" || ev.Action == "file_write") && !ev.ContentUnknown {
		return Reject(ReasonInvalidField, "a %s with noResult is contentUnknown", ev.Action)
	}
	if ev.Action != "mcp_call" && (len(ev.Arguments) > 0 || ev.IsError) {
		return Reject(ReasonInvalidField, "arguments and isError are an mcp_call event's")
	}
	switch ev.Action {
	case "command":
		if ev.Command == "" {
			return Reject(ReasonMissingField, "command event needs command")
		}
	case "file_read", "file_write":
		if ev.Path == "" {
			return Reject(ReasonMissingField, "%s event needs path", ev.Action)
		}
		if ev.ContentDigest != "" && ev.Content != "" {
			return Reject(ReasonInvalidField, "give content or contentDigest, not both")
		}
		if ev.ContentUnknown && (ev.Content != "" || ev.ContentDigest != "" || ev.Size != nil) {
			return Reject(ReasonInvalidField, "contentUnknown excludes content, contentDigest and size")
		}
		if ev.ContentDigest != "" && ev.Size == nil {
			return Reject(ReasonMissingField, "contentDigest needs size")
		}
		return CheckSize("event.size", ev.Size)
	case "fetch":
		if ev.URL == "" {
			return Reject(ReasonMissingField, "fetch event needs url")
		}
	case "mcp_call":
		if ev.Tool == "" {
			return Reject(ReasonMissingField, "mcp_call event needs tool")
		}
		return CheckRawJSON("event.arguments", ev.Arguments)
	}
	return nil
}

func (e *Envelope) validateEnd() error {
	if err := oneOf(ReasonInvalidField, "status", e.Status, EndStatuses); err != nil {
		return err
	}
	if err := oneOf(ReasonInvalidField, "billing", e.Billing, BillingSignals); err != nil {
		return err
	}
	if err := oneOf(ReasonInvalidField, "door", e.Door, Doors); err != nil {
		return err
	}
	// The session row keeps it as an integer (int4); one past it would fail
	// the recorder's whole batch, not just this envelope.
	if e.ExitCode != nil && (*e.ExitCode < math.MinInt32 || *e.ExitCode > math.MaxInt32) {
		return Reject(ReasonInvalidField, "exitCode must fit in 32 bits")
	}
	if err := checkUsage("", e.Usage, e.TotalCost); err != nil {
		return err
	}
	for i := range e.Artifacts {
		if err := CheckSize(fmt.Sprintf("artifacts[%d].size", i), e.Artifacts[i].Size); err != nil {
			return err
		}
		if err := checkDigest(fmt.Sprintf("artifacts[%d].contentDigest", i), e.Artifacts[i].ContentDigest); err != nil {
			return err
		}
	}
	return nil
}

// checkUsage checks an end's, a session.usage's or a telemetry request's
// totalCost and usage; prefix names where they are ("telemetry.").
func checkUsage(prefix string, u *Usage, cost *float64) error {
	if cost != nil && (*cost < 0 || *cost > MaxCost) {
		return Reject(ReasonInvalidField, "%stotalCost must be 0 to %g", prefix, float64(MaxCost))
	}
	if u != nil {
		for _, n := range []int64{u.InputTokens, u.OutputTokens, u.CacheReadTokens, u.CacheWriteTokens, u.ReasoningTokens} {
			if n < 0 || n > MaxTokens {
				return Reject(ReasonInvalidField, "%susage token counts must be 0 to %d", prefix, int64(MaxTokens))
			}
		}
		if err := CheckRawJSON(prefix+"usage.raw", u.Raw); err != nil {
			return err
		}
	}
	return nil
}

// Bounds on reported figures: far beyond any real session, small enough
// that sums fit int64 and PostgreSQL's numeric and jsonb take them.
const (
	MaxTokens = 1e15
	MaxCost   = 1e9
)

// CostText is a reported cost as the shortest decimal that reads back as
// the same float (nil when none was reported), so a numeric column stores
// what the app said and not a binary artefact.
func CostText(cost *float64) *string {
	if cost == nil {
		return nil
	}
	s := strconv.FormatFloat(*cost, 'f', -1, 64)
	return &s
}

func (e *Envelope) validateMCP() error {
	if err := checkID("callId", e.CallID); err != nil {
		return err
	}
	if e.Tool == "" {
		return Reject(ReasonMissingField, "mcp.call needs tool")
	}
	return oneOf(ReasonInvalidField, "status", e.Status, MCPStatuses)
}

func oneOf(reason, field, v string, set []string) error {
	if slices.Contains(set, v) {
		return nil
	}
	return Reject(reason, "%s %q is not one of %q", field, v, set)
}

// checkDigest holds a digest, where one is given, to the library's one
// textual form ("blake3:" and 64 lower-case hex digits; the library
// imports streams, so its parser cannot be called here:
// TestDigestShapeMatchesLibrary keeps the two in step).
func checkDigest(field, v string) error {
	if v == "" || ValidDigest(v) {
		return nil
	}
	return Reject(ReasonInvalidField, "%s must be blake3: and 64 lower-case hex digits", field)
}

// ValidDigest reports whether s is a content digest: "blake3:" and 64
// lower-case hex digits.
func ValidDigest(s string) bool {
	h, ok := strings.CutPrefix(s, "blake3:")
	if !ok || len(h) != 64 {
		return false
	}
	for i := 0; i < len(h); i++ {
		if !(h[i] >= '0' && h[i] <= '9' || h[i] >= 'a' && h[i] <= 'f') {
			return false
		}
	}
	return true
}

// ValidID reports whether s is a subject-safe token: letters, digits, '-'
// and '_', 1 to MaxIDLen bytes.
func ValidID(s string) bool {
	if s == "" || len(s) > MaxIDLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

func checkID(field, v string) error {
	if v == "" {
		return Reject(ReasonMissingField, "%s is required", field)
	}
	if !ValidID(v) {
		if !utf8.ValidString(v) || len(v) > MaxIDLen {
			return Reject(ReasonInvalidID, "%s must be 1-%d letters, digits, '-' or '_'", field, MaxIDLen)
		}
		// The caller sees its value quoted, redacted: an id is never free
		// text, but a producer may put a key where an id belongs.
		return Reject(ReasonInvalidID, "%s %q must be 1-%d letters, digits, '-' or '_'", field, secrets.String(v), MaxIDLen)
	}
	return nil
}

// MachineID is a host name as a worker id: each character an id may not
// hold becomes '-', cut at MaxIDLen. spine collect names its machine so,
// and the telemetry doors a host.name, so one machine is one worker.
func MachineID(host string) string {
	b := []byte(host)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			b[i] = '-'
		}
	}
	return string(b[:min(len(b), MaxIDLen)])
}

// ValidOwnerID reports whether s can name an org or member: what ValidID
// allows plus '.' and '@' (owners are not part of subjects).
func ValidOwnerID(s string) bool {
	return ValidID(strings.NewReplacer(".", "_", "@", "_").Replace(s))
}
