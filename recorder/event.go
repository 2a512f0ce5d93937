package recorder

import (
	"encoding/json"
	"slices"

	"github.com/spinehq/spine/library"
	"github.com/spinehq/spine/spine"
	"github.com/spinehq/spine/streams"
)

// event turns an event chunk into one step plus one observation.
func (b *batch) event(s *Session, e *streams.Envelope) {
	ev := e.Event
	if ev.Action == "mcp_call" && slices.Contains(protocolTools, ev.Tool) {
		return // protocol, not work; its seq is consumed all the same
	}
	detail, result := b.describe(ev)
	seq := e.Seq
	callID := ""
	if ev.Action == "mcp_call" {
		callID = ev.CallID
		if callID != "" && b.calls[s.SessionRunID+"\x00"+callID] != "" {
			return // the MCP node's record (or the app's telemetry) came first and is the step
		}
	}
	id := b.addStep(s, ev.Action, spine.SourceSession, &seq, callID, detail, result, e.At)
	if ev.Action == "file_write" {
		b.pushed(s, id, detail, e.At)
	}
}

// describe splits an event into the step's detail (what was done) and the
// observation's body (what came of it). File contents go to the Library.
// A call whose result never came has only its detail and noResult: no
// output, exit code or status stands in for the one never reported.
func (b *batch) describe(ev *streams.Event) (detail, result map[string]any) {
	detail, result = map[string]any{}, map[string]any{}
	if ev.NoResult {
		result["noResult"] = true
	}
	switch ev.Action {
	case "command":
		detail["command"] = ev.Command
		if !ev.NoResult {
			result["exitCode"] = ev.ExitCode
			result["output"] = ev.Output
		}
	case "file_read", "file_write":
		detail["path"] = ev.Path
		b.content(ev, detail)
		for _, k := range []string{"contentDigest", "size", "contentOmitted", "contentMissing", "contentUnknown", "contentPushed"} {
			if v, ok := detail[k]; ok {
				result[k] = v
			}
		}
	case "fetch":
		detail["url"] = ev.URL
		if !ev.NoResult {
			result["status"] = ev.Status
		}
		if ev.Output != "" {
			result["output"] = ev.Output
		}
	case "mcp_call":
		detail["server"], detail["tool"], detail["callId"] = ev.Server, ev.Tool, ev.CallID
		if len(ev.Arguments) > 0 {
			detail["arguments"] = ev.Arguments
		}
		if ev.Output != "" {
			result["output"] = ev.Output
		}
		if ev.IsError {
			result["isError"] = true
		}
	}
	return detail, result
}

// content stores a file event's content in the Library (or references a
// digest the cockpit pushed separately) and notes it on the step.
func (b *batch) content(ev *streams.Event, detail map[string]any) {
	switch {
	case ev.ContentUnknown: // the source never said: no file, no size
		detail["contentMissing"], detail["contentUnknown"] = true, true
	case ev.ContentDigest != "":
		if _, err := library.ParseDigest(ev.ContentDigest); err != nil {
			detail["contentMissing"] = true
			detail["contentError"] = "malformed contentDigest"
			return
		}
		detail["contentDigest"], detail["size"] = ev.ContentDigest, *ev.Size
		detail["contentPushed"] = true
	case ev.Content != "" || ev.Size == nil:
		data := []byte(ev.Content)
		detail["size"] = len(data)
		if len(data) > b.r.fileCap {
			detail["contentDigest"] = library.Digest(data)
			detail["contentOmitted"] = true
			return
		}
		detail["contentDigest"] = b.putBlob(data)
	}
}

func (b *batch) putBlob(data []byte) string {
	bl := library.NewBlob(data)
	b.blobs[bl.Digest] = bl
	return bl.Digest
}

// mcpCall records a call the MCP node saw as a step in the session's run.
func (b *batch) mcpCall(m streams.Message, e *streams.Envelope) error {
	s, rej := b.session(m, e)
	if rej != nil {
		return rej
	}
	s.heard(m) // the MCP node saw the session at work, protocol calls included
	if slices.Contains(protocolTools, e.Tool) {
		return nil
	}
	result := map[string]any{"status": e.Status, "durationMs": e.DurationMs}
	if e.Error != "" {
		result["error"] = e.Error
	}
	if existing := b.callStep(s.SessionRunID, e.CallID); existing != "" { // the session's own event came first: add what the node saw
		result["source"] = spine.SourceMCP
		b.observe(s, existing, spine.ObsResult, mustJSON(result), e.At)
		return nil
	}
	detail := map[string]any{"server": e.Server, "tool": e.Tool, "callId": e.CallID}
	b.addStep(s, "mcp_call", spine.SourceMCP, nil, e.CallID, detail, result, e.At)
	return nil
}

// callStep is the step that recorded the call, "" when none has: of this
// batch, or of an earlier one (preloadCalls).
func (b *batch) callStep(runID, callID string) string { return b.calls[runID+"\x00"+callID] }

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // maps of strings and numbers always encode
	}
	return b
}
