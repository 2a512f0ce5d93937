// Package fakemodel is a scripted model server for tests that run the real
// Claude Code and Codex binaries: it speaks Anthropic's Messages API
// (POST /v1/messages, streamed) and OpenAI's Responses API (POST
// /v1/responses, streamed) on loopback, answers each request with the next
// scripted turn, and logs every response it served. The log is the ground
// truth a test compares spine's import with: the model API is the one
// boundary spine's tests fake; the apps are real.
//
// Example:
//
//	srv := fakemodel.Start(t)
//	srv.Anthropic(fakemodel.Turn{Blocks: []fakemodel.Block{fakemodel.Text("hello")},
//		Usage: fakemodel.Usage{Input: 12, Output: 3, CacheRead: 4000}})
//	// run claude with ANTHROPIC_BASE_URL=srv.URL() ...
//	for _, r := range srv.Log() { ... }
//
// A turn with a Hold stops mid-stream after HoldAfter of its blocks until
// the test calls Release: the app has part of the response and waits, so a
// test can read what spine made of the part while the app still runs
// (Hold.Reached says when the stream stopped).
//
// # What Claude Code sends
//
// Claude Code 2.1.197 run as `claude -p` with ANTHROPIC_BASE_URL at this
// server, ANTHROPIC_API_KEY set and CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1
// (measured with the real binary) makes one HEAD / per process (answered
// 200, not logged), then only POST /v1/messages?beta=true requests with
// "stream": true, one per model turn: the main thread's, and a Task
// subagent's (the app's tool is named "Agent" in the request). The two
// differ in the first system block, the billing header
// "x-anthropic-billing-header: cc_version=…; cc_entrypoint=sdk-cli;", which
// a subagent's request extends with "cc_is_subagent=true;": Served.Thread
// says which, and MainThread and Subagent match them for Turn.Match. A
// resumed run (--resume) sends the same kind of requests. No title,
// summary or quota request was seen in print mode; a request no scripted
// turn matches still gets an answer (Turn -1 in the log, usage
// defaultAnthropic's), so a side request a later version sends costs
// tokens the log shows.
//
// Claude Code names the model it asked for with a context suffix in its
// own reports (result.modelUsage "claude-opus-4-8[1m]") while the request
// and the response say "claude-opus-4-8".
//
// # What Codex 0.171.0 sends
//
// Only streaming POST /v1/responses (no title, compaction or other side
// requests at these sizes), headers originator: codex_exec, session-id and
// thread-id (the thread's id), x-codex-turn-metadata (request_kind
// "turn"), Authorization: Bearer with the provider's env_key value. The
// body has model, stream, input (developer instructions, an
// environment_context user message, the prompt, then every earlier item
// and tool output), reasoning {effort}, include
// ["reasoning.encrypted_content"], store false and prompt_cache_key (the
// thread id). The tools it declares for a model it knows (gpt-5.5):
// exec_command (a function, arguments {"cmd": …}; there is no "shell"),
// write_stdin, request_user_input, apply_patch as a custom (freeform,
// grammar) tool whose call carries the patch as its input string,
// view_image, get_goal/create_goal/update_goal, tool_search (client
// executed), web_search, and with MCP servers list_mcp_resources,
// list_mcp_resource_templates and read_mcp_resource. MCP tools themselves
// are deferred: a tool_search_call (object arguments {query, limit}) is
// answered with a tool_search_output naming a namespace "mcp__NAME"; a
// call to one is a function_call with that namespace and the bare tool
// name. For a model it does not know, Codex warns (an error item in exec
// --json) and declares no apply_patch. Signed in with ChatGPT
// (apprig's CodexOptions.ChatGPT) it also asks GET /v1/models (answered
// 404) and names the account in its rollout's session_meta.
//
// Codex reads response.output_item.done items and response.completed's
// usage; the server also sends response.output_item.added and the text
// and reasoning-summary deltas as OpenAI does. A tool block's Input is
// the function call's arguments, or, when it is a string, a custom tool
// call's input (apply_patch); a block for "tool_search" is a
// tool_search_call. Codex reports each response's usage in its rollout
// (token_usage_record, with the response id) and the thread's running
// total on token_count and on exec --json's turn.completed.
package fakemodel

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"
)

// Server is a running fake model server.
type Server struct {
	url  string
	http *http.Server

	mu        sync.Mutex
	anthropic []Turn // scripted turns not yet served, by API
	openai    []Turn
	used      [2]int // scripted turns served: anthropic, openai
	queued    [2]int // scripted turns queued, by API: the next one's index
	served    []Served
	n         int // ids handed out
}

// Turn is one scripted model response: its content blocks in order and the
// usage it reports.
type Turn struct {
	Blocks []Block
	Usage  Usage
	// Model overrides the model named in the response; "" echoes the
	// request's model.
	Model string
	// Match, when set, must accept the request for this turn to answer it;
	// a request no queued turn matches gets the default answer. It sees
	// the request body as sent.
	Match func(body []byte) bool
	// Hold, when set, stops the streamed response after HoldAfter of its
	// blocks (each whole: started, filled and stopped; 0 is right after
	// the response's start) until the test releases it, so the app has
	// part of a response and waits for the rest: a test reads what the app
	// made of the part while the app still runs. A response sent whole
	// (not streamed) is not held.
	Hold      *Hold
	HoldAfter int

	index int // in its API's script, set when queued
}

// Hold stops a streamed turn mid-stream (Turn.Hold) until Release.
type Hold struct {
	reached, released chan struct{}
	reach, release    sync.Once
}

// NewHold is a hold not yet reached nor released.
func NewHold() *Hold { return &Hold{reached: make(chan struct{}), released: make(chan struct{})} }

// Reached is closed once a response stopped at the hold, what came before
// it sent (flushed).
func (h *Hold) Reached() <-chan struct{} { return h.reached }

// Release lets the held response go on (and any later one at the same
// hold pass); releasing twice is fine.
func (h *Hold) Release() { h.release.Do(func() { close(h.released) }) }

// wait stops at the hold, if there is one at block i, until it is
// released or the client gives up (done).
func (t Turn) wait(i int, done <-chan struct{}) {
	if t.Hold == nil || i != t.HoldAfter {
		return
	}
	t.Hold.reach.Do(func() { close(t.Hold.reached) })
	select {
	case <-t.Hold.released:
	case <-done:
	}
}

// Block is one content block of a response.
type Block struct {
	Kind string // "text", "thinking" or "tool"
	Text string // text and thinking
	Tool string // the tool's name (tool blocks)
	// Input is the tool's arguments (tool blocks), marshalled to a JSON
	// object; for OpenAI a string is a custom tool call's input instead
	// (Codex's apply_patch).
	Input any
	// Namespace is a Responses-API function call's namespace (Codex's MCP
	// tools, e.g. "mcp__spine"); "" for none.
	Namespace string
	// ID is the tool call's id; "" gets a generated one.
	ID string
}

// Text is a text block.
func Text(s string) Block { return Block{Kind: "text", Text: s} }

// Thinking is a thinking (reasoning) block.
func Thinking(s string) Block { return Block{Kind: "thinking", Text: s} }

// Tool is a tool call with its arguments.
func Tool(name string, input any) Block { return Block{Kind: "tool", Tool: name, Input: input} }

// inputJSON is a tool block's arguments as a JSON object.
func (b Block) inputJSON() string {
	if b.Input == nil {
		return "{}"
	}
	out, err := json.Marshal(b.Input)
	if err != nil {
		panic(fmt.Sprintf("fakemodel: tool %s input: %v", b.Tool, err))
	}
	return string(out)
}

// Usage is what a response reports it used. Anthropic: Input is
// input_tokens (excluding cache), CacheRead cache_read_input_tokens,
// CacheWrite5m + CacheWrite1h cache_creation_input_tokens (split in
// usage.cache_creation). OpenAI: input_tokens is Input + CacheRead, with
// CacheRead as input_tokens_details.cached_tokens; Reasoning is
// output_tokens_details.reasoning_tokens, a part of Output.
type Usage struct {
	Input, Output, CacheRead, CacheWrite5m, CacheWrite1h, Reasoning int64
}

// Add adds u2 to u.
func (u *Usage) Add(u2 Usage) {
	u.Input += u2.Input
	u.Output += u2.Output
	u.CacheRead += u2.CacheRead
	u.CacheWrite5m += u2.CacheWrite5m
	u.CacheWrite1h += u2.CacheWrite1h
	u.Reasoning += u2.Reasoning
}

// Served is one response the server sent: the ground truth.
type Served struct {
	API       string // "anthropic" or "openai"
	Model     string // as named in the response
	ID        string // the message or response id
	RequestID string // Anthropic's request-id header; "" for OpenAI
	Usage     Usage
	// Turn is the scripted turn's index in its API's script, or -1 for a
	// default answer (a request no scripted turn was left for).
	Turn int
	// Tools are the tool calls' ids, in order.
	Tools []string
	// Thread is which thread of the app asked, where the request says:
	// ThreadMain or ThreadSubagent for the Messages API; "" where the
	// API does not tell.
	Thread string
	// At is when the response was sent (just before its last event, or
	// before a whole body); Received when its request came in (zero where
	// the API's handler does not note it).
	At, Received time.Time
	// Request is the request body as the app sent it.
	Request json.RawMessage
}

// Start starts a server on 127.0.0.1 and stops it when the test ends.
func Start(tb testing.TB) *Server {
	tb.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	s := &Server{url: "http://" + l.Addr().String()}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/messages", s.messages)
	mux.HandleFunc("POST /v1/responses", s.responses)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodHead || r.URL.Path == "/" {
			w.WriteHeader(http.StatusOK)
			return
		}
		http.Error(w, "fakemodel: no such route "+r.Method+" "+r.URL.Path, http.StatusNotFound)
	})
	s.http = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go s.http.Serve(l) //nolint:errcheck // ends with Close
	tb.Cleanup(func() { s.http.Close() })
	return s
}

// URL is the server's base URL, http://127.0.0.1:PORT.
func (s *Server) URL() string { return s.url }

// Anthropic queues turns for /v1/messages, answered in order.
func (s *Server) Anthropic(turns ...Turn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.anthropic = append(s.anthropic, indexed(turns, &s.queued[0])...)
}

// OpenAI queues turns for /v1/responses, answered in order.
func (s *Server) OpenAI(turns ...Turn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.openai = append(s.openai, indexed(turns, &s.queued[1])...)
}

// indexed copies turns, numbering them on from *next.
func indexed(turns []Turn, next *int) []Turn {
	out := make([]Turn, len(turns))
	for i, t := range turns {
		t.index, *next = *next, *next+1
		out[i] = t
	}
	return out
}

// Log is every response served so far, in order.
func (s *Server) Log() []Served {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Served(nil), s.served...)
}

// Scripted is the log without default answers.
func (s *Server) Scripted() []Served {
	var out []Served
	for _, r := range s.Log() {
		if r.Turn >= 0 {
			out = append(out, r)
		}
	}
	return out
}

// next takes the first queued turn of an API that accepts body, with its
// index in the script; ok is false when none does. Turns before it stay
// queued.
func (s *Server) next(queue *[]Turn, used *int, body []byte) (Turn, int, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, t := range *queue {
		if t.Match == nil || t.Match(body) {
			*queue = append((*queue)[:i:i], (*queue)[i+1:]...)
			*used++
			return t, t.index, true
		}
	}
	return Turn{}, -1, false
}

// record appends a served response to the log.
func (s *Server) record(r Served) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r.At = time.Now().UTC()
	s.served = append(s.served, r)
}

// id is a fresh id with a prefix.
func (s *Server) id(prefix string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.n++
	return fmt.Sprintf("%s%024d", prefix, s.n)
}

// readBody reads a request's body, at most 64 MiB.
func readBody(r *http.Request) ([]byte, error) {
	return io.ReadAll(io.LimitReader(r.Body, 64<<20))
}
