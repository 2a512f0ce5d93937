package fakemodel

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"net/http"
	"time"
)

// subagentMark is what the billing header of a subagent's request carries.
var subagentMark = []byte("cc_is_subagent=true")

// Thread names of Served.Thread for the Messages API.
const (
	ThreadMain     = "main"
	ThreadSubagent = "subagent"
)

// MainThread matches a Messages request from Claude Code's main thread (for
// Turn.Match).
func MainThread(body []byte) bool { return anthropicThread(body) == ThreadMain }

// Subagent matches a Messages request from a Task subagent (for Turn.Match).
func Subagent(body []byte) bool { return anthropicThread(body) == ThreadSubagent }

// anthropicThread tells the main thread from a subagent by the billing
// header in the request's first system block.
func anthropicThread(body []byte) string {
	var req struct {
		System json.RawMessage `json:"system"`
	}
	if json.Unmarshal(body, &req) != nil {
		return ThreadMain
	}
	var blocks []struct {
		Text string `json:"text"`
	}
	if json.Unmarshal(req.System, &blocks) == nil && len(blocks) > 0 &&
		bytes.Contains([]byte(blocks[0].Text), subagentMark) {
		return ThreadSubagent
	}
	return ThreadMain
}

// defaultAnthropic answers a request no scripted turn matches.
var defaultAnthropic = Turn{
	Blocks: []Block{Text("ok")},
	Usage:  Usage{Input: 8, Output: 2},
}

// messages serves POST /v1/messages (Anthropic's Messages API), streamed
// as server-sent events when the request asks for "stream", else as one
// JSON message.
func (s *Server) messages(w http.ResponseWriter, r *http.Request) {
	received := time.Now().UTC()
	body, err := readBody(r)
	if err != nil {
		http.Error(w, "fakemodel: read body: "+err.Error(), http.StatusBadRequest)
		return
	}
	var req struct {
		Model  string `json:"model"`
		Stream bool   `json:"stream"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		http.Error(w, "fakemodel: decode request: "+err.Error(), http.StatusBadRequest)
		return
	}
	turn, n, ok := s.next(&s.anthropic, &s.used[0], body)
	if !ok {
		turn = defaultAnthropic
	}
	m := s.anthropicMessage(turn, cmp.Or(turn.Model, req.Model))
	w.Header().Set("request-id", m.requestID)
	// logged before the response ends, so a client that has read it all
	// finds it in the log
	served := func() {
		s.record(Served{
			API: "anthropic", Model: m.model, ID: m.id, RequestID: m.requestID,
			Usage: turn.Usage, Turn: n, Tools: m.toolIDs(), Thread: anthropicThread(body),
			Request: json.RawMessage(body), Received: received,
		})
	}
	if req.Stream {
		m.stream(w, served, func(i int) { turn.wait(i, r.Context().Done()) })
	} else {
		served()
		m.whole(w)
	}
}

// anthropicMsg is one response being written, its ids fixed.
type anthropicMsg struct {
	id, requestID, model string
	blocks               []Block // tool blocks with their ids filled in
	usage                Usage
}

// anthropicMessage fixes a turn's ids.
func (s *Server) anthropicMessage(t Turn, model string) *anthropicMsg {
	m := &anthropicMsg{id: s.id("msg_"), requestID: s.id("req_"), model: model, usage: t.Usage}
	for _, b := range t.Blocks {
		if b.Kind == "tool" && b.ID == "" {
			b.ID = s.id("toolu_")
		}
		m.blocks = append(m.blocks, b)
	}
	return m
}

// toolIDs are the tool calls' ids in order.
func (m *anthropicMsg) toolIDs() []string {
	var ids []string
	for _, b := range m.blocks {
		if b.Kind == "tool" {
			ids = append(ids, b.ID)
		}
	}
	return ids
}

// stopReason is tool_use when the message calls a tool, else end_turn.
func (m *anthropicMsg) stopReason() string {
	if len(m.toolIDs()) > 0 {
		return "tool_use"
	}
	return "end_turn"
}

// usageJSON is the usage object as Anthropic reports it on the message
// (message_start, a whole message), with output as given: message_start
// carries a small output count.
func (m *anthropicMsg) usageJSON(output int64) map[string]any {
	u := m.usage
	return map[string]any{
		"input_tokens":                u.Input,
		"cache_read_input_tokens":     u.CacheRead,
		"cache_creation_input_tokens": u.CacheWrite5m + u.CacheWrite1h,
		"cache_creation": map[string]int64{
			"ephemeral_5m_input_tokens": u.CacheWrite5m,
			"ephemeral_1h_input_tokens": u.CacheWrite1h,
		},
		"output_tokens": output,
		"service_tier":  "standard",
	}
}

// deltaUsageJSON is message_delta's usage as Anthropic documents it
// (MessageDeltaUsage): the cumulative counts, output final, without the
// cache_creation split or service_tier of the message's. With no server
// tool (one iteration) the input and cache counts are message_start's.
func (m *anthropicMsg) deltaUsageJSON() map[string]any {
	u := m.usage
	return map[string]any{
		"input_tokens":                u.Input,
		"cache_read_input_tokens":     u.CacheRead,
		"cache_creation_input_tokens": u.CacheWrite5m + u.CacheWrite1h,
		"output_tokens":               u.Output,
	}
}

// startOutput is the output count message_start reports: Anthropic's is
// a token or a few, never the final count.
func (m *anthropicMsg) startOutput() int64 { return min(m.usage.Output, 1) }

// thinkingSignature is a thinking block's signature.
func thinkingSignature(b Block) string { return fmt.Sprintf("sig-%x", len(b.Text)) }

// anthropicBlockStart is a content block as content_block_start opens it.
func anthropicBlockStart(b Block) map[string]any {
	switch b.Kind {
	case "thinking":
		return map[string]any{"type": "thinking", "thinking": "", "signature": ""}
	case "tool":
		return map[string]any{"type": "tool_use", "id": b.ID, "name": b.Tool, "input": map[string]any{}}
	}
	return map[string]any{"type": "text", "text": ""}
}

// anthropicBlockDeltas are the deltas that fill a block in.
func anthropicBlockDeltas(b Block) []map[string]any {
	switch b.Kind {
	case "thinking":
		return []map[string]any{
			{"type": "thinking_delta", "thinking": b.Text},
			{"type": "signature_delta", "signature": thinkingSignature(b)},
		}
	case "tool":
		args := b.inputJSON()
		half := len(args) / 2
		return []map[string]any{
			{"type": "input_json_delta", "partial_json": ""},
			{"type": "input_json_delta", "partial_json": args[:half]},
			{"type": "input_json_delta", "partial_json": args[half:]},
		}
	}
	return []map[string]any{{"type": "text_delta", "text": b.Text}}
}

// anthropicBlockWhole is a content block as a non-streamed message carries it.
func anthropicBlockWhole(b Block) map[string]any {
	switch b.Kind {
	case "thinking":
		return map[string]any{"type": "thinking", "thinking": b.Text, "signature": thinkingSignature(b)}
	case "tool":
		return map[string]any{"type": "tool_use", "id": b.ID, "name": b.Tool, "input": json.RawMessage(b.inputJSON())}
	}
	return map[string]any{"type": "text", "text": b.Text}
}

// message is the message object, its content and usage as given.
func (m *anthropicMsg) message(content []map[string]any, stop any, output int64) map[string]any {
	return map[string]any{
		"id": m.id, "type": "message", "role": "assistant", "model": m.model,
		"content": content, "stop_reason": stop, "stop_sequence": nil,
		"usage": m.usageJSON(output),
	}
}

// stream writes the message as Anthropic's server-sent events, a ping
// after the first block's start as the API sends one, calling last just
// before the last event (message_stop) and hold before each block (and
// before the end, with the count of blocks).
func (m *anthropicMsg) stream(w http.ResponseWriter, last func(), hold func(int)) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	ev := anthropicEvents{w: w}
	ev.send("message_start", map[string]any{"type": "message_start",
		"message": m.message([]map[string]any{}, nil, m.startOutput())})
	for i, b := range m.blocks {
		hold(i)
		ev.send("content_block_start", map[string]any{"type": "content_block_start", "index": i, "content_block": anthropicBlockStart(b)})
		if i == 0 {
			ev.send("ping", map[string]any{"type": "ping"})
		}
		for _, d := range anthropicBlockDeltas(b) {
			ev.send("content_block_delta", map[string]any{"type": "content_block_delta", "index": i, "delta": d})
		}
		ev.send("content_block_stop", map[string]any{"type": "content_block_stop", "index": i})
	}
	hold(len(m.blocks))
	ev.send("message_delta", map[string]any{"type": "message_delta",
		"delta": map[string]any{"stop_reason": m.stopReason(), "stop_sequence": nil},
		"usage": m.deltaUsageJSON()})
	last()
	ev.send("message_stop", map[string]any{"type": "message_stop"})
}

// whole writes the message as one JSON body.
func (m *anthropicMsg) whole(w http.ResponseWriter) {
	content := []map[string]any{}
	for _, b := range m.blocks {
		content = append(content, anthropicBlockWhole(b))
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(m.message(content, m.stopReason(), m.usage.Output)) //nolint:errcheck // the client hung up
}

// anthropicEvents writes server-sent events, flushing each.
type anthropicEvents struct{ w http.ResponseWriter }

// send writes one event.
func (e anthropicEvents) send(event string, data any) {
	b, err := json.Marshal(data)
	if err != nil {
		panic(fmt.Sprintf("fakemodel: event %s: %v", event, err))
	}
	fmt.Fprintf(e.w, "event: %s\ndata: %s\n\n", event, b)
	if f, ok := e.w.(http.Flusher); ok {
		f.Flush()
	}
}
