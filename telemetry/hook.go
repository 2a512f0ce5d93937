package telemetry

import (
	"bytes"
	"encoding/json"
	"time"
	"unicode/utf8"

	"github.com/spinehq/spine/streams"
)

// MaxHookBytes bounds a hook's body. PostToolUse carries the tool's whole
// result (a Read of a large file, a command's output): the largest
// envelope spine stores, with room for the JSON around it.
const MaxHookBytes = streams.MaxEnvelopeBytes + 64<<10

// Hook is the JSON body Claude Code's "type": "http" hooks POST
// (docs/telemetry.md, what the hooks post). Only the fields spine reads;
// the rest (transcript_path, cwd, permission_mode, last_assistant_message,
// …) are not kept.
type Hook struct {
	SessionID    string          `json:"session_id"`
	Event        string          `json:"hook_event_name"`
	PromptID     string          `json:"prompt_id"`
	Prompt       string          `json:"prompt"`
	ToolName     string          `json:"tool_name"`
	ToolUseID    string          `json:"tool_use_id"`
	ToolInput    json.RawMessage `json:"tool_input"`
	ToolResponse json.RawMessage `json:"tool_response"`
	DurationMs   *int64          `json:"duration_ms"`
	Error        string          `json:"error"`
	Reason       string          `json:"reason"`
}

// DecodeHook reads a hook's body: one JSON object, valid UTF-8 (the
// envelope it becomes must be). ErrMalformed otherwise, never quoting the
// body (a prompt, a command's output).
func DecodeHook(b []byte) (*Hook, error) {
	if !utf8.Valid(b) {
		return nil, &MalformedError{Layer: "hook", err: errInvalidUTF8}
	}
	var h Hook
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&h); err != nil {
		return nil, &MalformedError{Layer: "hook JSON", err: err}
	}
	if dec.More() {
		return nil, &MalformedError{Layer: "hook JSON", err: errTrailing}
	}
	return &h, nil
}

// Envelope is the session.telemetry a hook becomes, or nil for the hooks
// spine records nothing of (Stop, SubagentStop, …): UserPromptSubmit is a
// prompt (its digest, never its text), PreToolUse a tool use begun,
// PostToolUse and PostToolUseFailure one ended with what it did as an
// event, SessionEnd the session's end. Hooks carry no time: received is
// the event's. As Translate's, the envelope is the door's to finish (its
// owner) and the publisher's to redact.
func (h *Hook) Envelope(received time.Time) (*streams.Envelope, error) {
	t, key := h.telemetry()
	if t == nil {
		return nil, nil
	}
	if h.SessionID == "" {
		return nil, ErrNoSession
	}
	return envelope("claude-code", h.SessionID, key, received.UTC(), t), nil
}

func (h *Hook) telemetry() (*streams.Telemetry, string) {
	switch h.Event {
	case "UserPromptSubmit":
		return h.prompt()
	case "PreToolUse", "PostToolUse", "PostToolUseFailure":
		return h.tool()
	case "SessionEnd":
		return &streams.Telemetry{Kind: streams.TelemetryEnd, Source: streams.TelemetryHook, Reason: h.Reason}, "end"
	}
	return nil, ""
}

// prompt is UserPromptSubmit: the prompt's id, its length as Claude Code
// counts it (UTF-16 code units, as its user_prompt's prompt_length) and
// its digest.
func (h *Hook) prompt() (*streams.Telemetry, string) {
	n := int64(utf16Len(h.Prompt))
	t := &streams.Telemetry{Kind: streams.TelemetryPrompt, Source: streams.TelemetryHook, PromptLength: &n,
		PromptDigest: promptDigest(h.Prompt)}
	if streams.ValidKey(h.PromptID) {
		t.PromptID = h.PromptID
		return t, h.PromptID
	}
	return t, t.PromptDigest
}

// tool is a tool use before it ran (PreToolUse) or after (PostToolUse,
// PostToolUseFailure: its event, as spine collect would record it). A
// hook without a tool use id is none: its two halves could not be paired.
func (h *Hook) tool() (*streams.Telemetry, string) {
	if h.ToolUseID == "" {
		return nil, ""
	}
	t := &streams.Telemetry{Kind: streams.TelemetryTool, Source: streams.TelemetryHook, ToolUseID: toolUseID(h.ToolUseID),
		Tool: h.ToolName, Phase: streams.PhasePre}
	if h.Event != "PreToolUse" {
		ok := h.Event == "PostToolUse"
		t.Phase, t.Success, t.DurationMs = streams.PhasePost, &ok, h.duration()
		t.Event = h.action(t.ToolUseID, ok)
	}
	return t, t.ToolUseID + ":" + t.Phase
}

func (h *Hook) duration() *int64 {
	if d := h.DurationMs; d != nil && *d >= 0 && *d <= streams.MaxTelemetryCount {
		return d
	}
	return nil
}

// utf16Len is the length of s in UTF-16 code units: JavaScript's length.
func utf16Len(s string) int {
	n := 0
	for _, r := range s {
		n++
		if r > 0xFFFF {
			n++
		}
	}
	return n
}
