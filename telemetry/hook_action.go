package telemetry

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"

	"github.com/spinehq/spine/streams"
)

// hookInput is what spine reads of a tool's input.
type hookInput struct {
	Command  string `json:"command"`
	FilePath string `json:"file_path"`
	URL      string `json:"url"`
}

// action is what a finished tool use did, as the step spine collect would
// record for it: a Bash command with its output (and exit code when the
// failure states it), a Read or a Write/Edit/MultiEdit of a path, a
// WebFetch of a URL, an MCP server's tool (mcp__SERVER__TOOL) with its
// arguments. A file's content is not taken from a hook (contentUnknown):
// the step names the path. nil for another tool (Task, Glob, Grep, …), and
// for a Read or a write that failed (nothing was read or written), as
// spine collect records none.
func (h *Hook) action(callID string, ok bool) *streams.Event {
	var in hookInput
	_ = json.Unmarshal(h.ToolInput, &in)
	switch name := h.ToolName; {
	case name == "Bash" && in.Command != "":
		return h.command(in.Command, ok)
	case name == "Read" && in.FilePath != "" && ok:
		return &streams.Event{Action: "file_read", Path: in.FilePath, ContentUnknown: true}
	case (name == "Write" || name == "Edit" || name == "MultiEdit") && in.FilePath != "" && ok:
		return &streams.Event{Action: "file_write", Path: in.FilePath, ContentUnknown: true}
	case name == "WebFetch" && in.URL != "":
		return &streams.Event{Action: "fetch", URL: in.URL}
	case strings.HasPrefix(name, "mcp__"):
		return h.mcpCall(name, callID, ok)
	}
	return nil
}

// command is a Bash tool use: its command, what it printed (stdout, then
// stderr) or, failed, the error Claude Code reported ("Exit code 3"), and
// the exit code that error states.
func (h *Hook) command(command string, ok bool) *streams.Event {
	ev := &streams.Event{Action: "command", Command: command}
	if !ok {
		ev.Output, ev.ExitCode = h.Error, exitCode(h.Error)
		return ev
	}
	var out struct {
		Stdout string `json:"stdout"`
		Stderr string `json:"stderr"`
	}
	_ = json.Unmarshal(h.ToolResponse, &out)
	ev.Output = out.Stdout
	if out.Stderr != "" {
		ev.Output += "\n" + out.Stderr
	}
	return ev
}

// exitCode is the code a failed command's error states ("Exit code 3"),
// nil when it states none.
func exitCode(msg string) *int {
	rest, found := strings.CutPrefix(msg, "Exit code ")
	if !found {
		return nil
	}
	digits, _, _ := strings.Cut(rest, "\n")
	n, err := strconv.ParseInt(strings.TrimSpace(digits), 10, 32)
	if err != nil {
		return nil
	}
	code := int(n)
	return &code
}

// mcpCall is a tool of an MCP server, named mcp__SERVER__TOOL, with the
// arguments it was called with when they are a JSON object.
func (h *Hook) mcpCall(name, callID string, ok bool) *streams.Event {
	server, tool, _ := strings.Cut(strings.TrimPrefix(name, "mcp__"), "__")
	if tool == "" {
		server, tool = "", server
	}
	if tool == "" {
		return nil
	}
	ev := &streams.Event{Action: "mcp_call", Server: server, Tool: tool, CallID: callID, IsError: !ok}
	if args := bytes.TrimSpace(h.ToolInput); len(args) > 0 && args[0] == '{' && json.Valid(args) {
		ev.Arguments = append(json.RawMessage(nil), args...)
	}
	return ev
}
