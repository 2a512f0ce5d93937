package fakemodel

import (
	"cmp"
	"encoding/json"
	"fmt"
	"net/http"
)

// responses serves POST /v1/responses (OpenAI's Responses API, streamed as
// server-sent events): response.created, then per output item
// response.output_item.added, its deltas (output_text, reasoning summary
// text) and response.output_item.done, and last response.completed with
// the usage. What Codex 0.171 sends and expects is in doc.go.
func (s *Server) responses(w http.ResponseWriter, r *http.Request) {
	body, err := readBody(r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var req struct {
		Model string `json:"model"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		http.Error(w, "fakemodel: request body: "+err.Error(), http.StatusBadRequest)
		return
	}
	t, n, ok := s.next(&s.openai, &s.used[1], body)
	if !ok {
		t = defaultTurn
	}
	model := cmp.Or(t.Model, req.Model)
	id := s.id("resp_")
	items, tools := s.openaiItems(t.Blocks)
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	sse := &sseWriter{w: w}
	sse.send("response.created", map[string]any{"response": map[string]any{
		"id": id, "object": "response", "status": "in_progress", "model": model, "output": []any{}}})
	for i, it := range items {
		t.wait(i, r.Context().Done())
		sse.item(i, it)
	}
	t.wait(len(items), r.Context().Done())
	// logged before the last event, so a client that has read it all finds
	// it in the log
	s.record(Served{API: "openai", Model: model, ID: id, Usage: t.Usage, Turn: n, Tools: tools,
		Request: json.RawMessage(body)})
	sse.send("response.completed", map[string]any{"response": map[string]any{
		"id": id, "object": "response", "status": "completed", "model": model, "output": items,
		"usage": openaiUsage(t.Usage)}})
}

// defaultTurn answers a request no scripted turn was left for (or none
// matched): a short text with a small, nonzero usage, so that an
// unexpected request still shows in the log and in what the app counts.
var defaultTurn = Turn{Blocks: []Block{Text("ok")}, Usage: Usage{Input: 10, Output: 1}}

// openaiItems are a turn's blocks as Responses API output items, with the
// tool calls' ids in order. A tool block whose Input is a string is a
// custom (freeform) tool call, as Codex's apply_patch is; any other is a
// function call with its arguments as a JSON string.
func (s *Server) openaiItems(blocks []Block) ([]map[string]any, []string) {
	var items []map[string]any
	var tools []string
	for _, b := range blocks {
		switch b.Kind {
		case "text":
			items = append(items, map[string]any{"type": "message", "id": s.id("msg_"), "role": "assistant",
				"status": "completed", "content": []any{map[string]any{"type": "output_text", "text": b.Text,
					"annotations": []any{}}}})
		case "thinking":
			items = append(items, map[string]any{"type": "reasoning", "id": s.id("rs_"),
				"summary": []any{map[string]any{"type": "summary_text", "text": b.Text}}})
		case "tool":
			callID := cmp.Or(b.ID, s.id("call_"))
			tools = append(tools, callID)
			items = append(items, s.toolItem(b, callID))
		default:
			panic(fmt.Sprintf("fakemodel: block kind %q", b.Kind))
		}
	}
	return items, tools
}

func (s *Server) toolItem(b Block, callID string) map[string]any {
	if b.Tool == "tool_search" {
		return map[string]any{"type": "tool_search_call", "id": s.id("tsc_"), "call_id": callID,
			"execution": "client", "arguments": cmpOrAny(b.Input), "status": "completed"}
	}
	if in, ok := b.Input.(string); ok {
		return map[string]any{"type": "custom_tool_call", "id": s.id("ctc_"), "call_id": callID,
			"name": b.Tool, "input": in, "status": "completed"}
	}
	args, err := json.Marshal(cmpOrAny(b.Input))
	if err != nil {
		panic("fakemodel: tool input: " + err.Error())
	}
	it := map[string]any{"type": "function_call", "id": s.id("fc_"), "call_id": callID, "name": b.Tool,
		"arguments": string(args), "status": "completed"}
	if b.Namespace != "" {
		it["namespace"] = b.Namespace
	}
	return it
}

// openaiUsage is a usage as the Responses API reports it: input_tokens
// include the cached ones, output_tokens the reasoning ones.
func openaiUsage(u Usage) map[string]any {
	in := u.Input + u.CacheRead
	return map[string]any{
		"input_tokens":          in,
		"input_tokens_details":  map[string]any{"cached_tokens": u.CacheRead},
		"output_tokens":         u.Output,
		"output_tokens_details": map[string]any{"reasoning_tokens": u.Reasoning},
		"total_tokens":          in + u.Output,
	}
}

// sseWriter writes server-sent events, each flushed as it is written.
type sseWriter struct {
	w   http.ResponseWriter
	seq int
}

func (e *sseWriter) send(typ string, v map[string]any) {
	v["type"] = typ
	v["sequence_number"] = e.seq
	e.seq++
	b, err := json.Marshal(v)
	if err != nil {
		panic("fakemodel: event: " + err.Error())
	}
	fmt.Fprintf(e.w, "event: %s\ndata: %s\n\n", typ, b)
	if f, ok := e.w.(http.Flusher); ok {
		f.Flush()
	}
}

// item streams one output item: added (without its content), its deltas,
// done (whole).
func (e *sseWriter) item(i int, it map[string]any) {
	added := map[string]any{}
	for k, v := range it {
		added[k] = v
	}
	added["status"] = "in_progress"
	switch it["type"] {
	case "message":
		added["content"] = []any{}
	case "reasoning":
		added["summary"] = []any{}
	}
	e.send("response.output_item.added", map[string]any{"output_index": i, "item": added})
	switch it["type"] {
	case "message":
		text := it["content"].([]any)[0].(map[string]any)["text"]
		e.send("response.output_text.delta", map[string]any{"output_index": i, "content_index": 0,
			"item_id": it["id"], "delta": text})
		e.send("response.output_text.done", map[string]any{"output_index": i, "content_index": 0,
			"item_id": it["id"], "text": text})
	case "reasoning":
		text := it["summary"].([]any)[0].(map[string]any)["text"]
		e.send("response.reasoning_summary_part.added", map[string]any{"output_index": i, "summary_index": 0,
			"item_id": it["id"], "part": map[string]any{"type": "summary_text", "text": ""}})
		e.send("response.reasoning_summary_text.delta", map[string]any{"output_index": i, "summary_index": 0,
			"item_id": it["id"], "delta": text})
		e.send("response.reasoning_summary_text.done", map[string]any{"output_index": i, "summary_index": 0,
			"item_id": it["id"], "text": text})
	}
	e.send("response.output_item.done", map[string]any{"output_index": i, "item": it})
}

// cmpOrAny is v, or an empty object for nil: a call with no arguments
// still sends "{}".
func cmpOrAny(v any) any {
	if v == nil {
		return map[string]any{}
	}
	return v
}
