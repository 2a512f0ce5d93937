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
package fakemodel
