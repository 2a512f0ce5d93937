package apps

import (
	"bytes"
	"context"
	"regexp"
	"strconv"
	"strings"
	"time"

	json "github.com/spinehq/spine/internal/fastjson"

	"github.com/spinehq/spine/streams"
)

// What Claude Code writes in both its stream-json output and its
// transcripts: messages with content blocks, and usage per response.

type claudeMessage struct {
	ID      string          `json:"id"`
	Model   string          `json:"model"`
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
	Usage   *claudeUsage    `json:"usage"`
}

type claudeUsage struct {
	Input       int64 `json:"input_tokens"`
	Output      int64 `json:"output_tokens"`
	CacheCreate int64 `json:"cache_creation_input_tokens"`
	CacheRead   int64 `json:"cache_read_input_tokens"`
}

// tokens normalises Claude usage: input_tokens already excludes cache
// reads and writes, so each count is taken as reported.
func (u *claudeUsage) tokens() streams.Usage {
	if u == nil {
		return streams.Usage{}
	}
	return streams.Usage{InputTokens: u.Input, OutputTokens: u.Output, CacheReadTokens: u.CacheRead,
		CacheWriteTokens: u.CacheCreate}
}

type claudeBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"`
	IsError   bool            `json:"is_error"`
}

// syntheticModel marks a message Claude Code wrote itself: no model call.
const syntheticModel = "<synthetic>"

// blocks decodes message content: a string is one text block.
func blocks(raw json.RawMessage) []claudeBlock {
	// An array is never a string: it goes straight to the blocks, without
	// a failed decode (and its error) first.
	if c := bytes.TrimLeft(raw, " \t\r\n"); len(c) == 0 || c[0] != '[' {
		var text string
		if json.Unmarshal(raw, &text) == nil {
			return []claudeBlock{{Type: "text", Text: text}}
		}
	}
	var bs []claudeBlock
	_ = json.Unmarshal(raw, &bs)
	return bs
}

// assistant records a response: its text as stdout, its tool calls as
// pending actions, and its usage once per (message.id, requestId).
func (s *session) assistant(ctx context.Context, at time.Time, m *claudeMessage, requestID string) error {
	s.begun = true
	if m.Usage != nil && m.ID != "" && m.Model != syntheticModel {
		s.tr.countResponse(s, at, responseKey(s.app(), m.ID, requestID), m.Usage.tokens())
		if m.Model != "" {
			s.model = s.tr.intern(m.Model)
		}
	}
	for _, b := range blocks(m.Content) {
		var err error
		switch b.Type {
		case "text":
			if b.Text != "" {
				err = s.prose(ctx, at, "stdout", b.Text+"\n")
			}
		case "tool_use":
			err = s.call(ctx, b.ID, at, claudeTool(b.Name, b.ID, b.Input))
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// user records a user message: prompts as text, tool results as the
// completion of their calls. structured is Claude Code's toolUseResult.
func (s *session) user(ctx context.Context, at time.Time, m *claudeMessage, structured json.RawMessage) error {
	for _, b := range blocks(m.Content) {
		var err error
		switch b.Type {
		case "text":
			err = s.userText(ctx, at, b.Text)
		case "tool_result":
			err = s.result(ctx, b.ToolUseID, at, callResult{content: b.Content, isError: b.IsError,
				structured: structured})
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// resultText flattens tool_result content (a string or text blocks).
func resultText(raw json.RawMessage) string {
	var parts []string
	for _, b := range blocks(raw) {
		if b.Type == "text" {
			parts = append(parts, b.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// claudeTool maps a Claude Code tool call to the cockpit's actions. Tools
// that are none of command, file read or write, fetch or MCP call (Task,
// TodoWrite, Glob, Grep…) are not actions: they record nothing. Nor does a
// Read, Write, Edit or MultiEdit whose result is an error (is_error): no
// file was read or changed, and the error text is no file's content (the
// model's next words, in the transcript, usually say what went wrong).
func claudeTool(name, id string, input json.RawMessage) func(callResult) []*streams.Event {
	var in struct {
		Command    string `json:"command"`
		FilePath   string `json:"file_path"`
		Content    string `json:"content"`
		OldString  string `json:"old_string"`
		NewString  string `json:"new_string"`
		ReplaceAll bool   `json:"replace_all"`
		Edits      []struct {
			OldString  string `json:"old_string"`
			NewString  string `json:"new_string"`
			ReplaceAll bool   `json:"replace_all"`
		} `json:"edits"`
		URL string `json:"url"`
	}
	_ = json.Unmarshal(input, &in)
	one := func(ev *streams.Event) []*streams.Event { return []*streams.Event{ev} }
	switch {
	case name == "Bash" && in.Command != "":
		return func(r callResult) []*streams.Event {
			out, code := bashOutput(r)
			return one(&streams.Event{Action: "command", Command: in.Command, Output: out, ExitCode: code})
		}
	case name == "Read" && in.FilePath != "":
		return func(r callResult) []*streams.Event {
			if r.isError {
				return nil // nothing was read
			}
			var st struct {
				File struct {
					Content *string `json:"content"`
				} `json:"file"`
			}
			_ = json.Unmarshal(r.structured, &st)
			if st.File.Content != nil {
				return one(&streams.Event{Action: "file_read", Path: in.FilePath, Content: *st.File.Content})
			}
			content := r.output() // numbered lines when the raw file was not kept
			return one(&streams.Event{Action: "file_read", Path: in.FilePath, Content: content})
		}
	case name == "Write" && in.FilePath != "":
		return func(r callResult) []*streams.Event {
			if r.isError {
				return nil // the file was not written
			}
			return one(&streams.Event{Action: "file_write", Path: in.FilePath, Content: in.Content})
		}
	case (name == "Edit" || name == "MultiEdit") && in.FilePath != "":
		return func(r callResult) []*streams.Event {
			if r.isError {
				return nil // the file was not changed
			}
			var st struct {
				OriginalFile *string `json:"originalFile"`
			}
			_ = json.Unmarshal(r.structured, &st)
			if st.OriginalFile == nil {
				// the edit's result did not keep the file: what it holds now is unknown
				return one(&streams.Event{Action: "file_write", Path: in.FilePath, ContentUnknown: true})
			}
			content := *st.OriginalFile
			if name == "Edit" {
				content = applyEdit(content, in.OldString, in.NewString, in.ReplaceAll)
			}
			for _, e := range in.Edits {
				content = applyEdit(content, e.OldString, e.NewString, e.ReplaceAll)
			}
			return one(&streams.Event{Action: "file_write", Path: in.FilePath, Content: content})
		}
	case name == "WebFetch" && in.URL != "":
		return func(r callResult) []*streams.Event {
			return one(&streams.Event{Action: "fetch", URL: in.URL, Output: r.output()})
		}
	case strings.HasPrefix(name, "mcp__"):
		server, tool, _ := strings.Cut(strings.TrimPrefix(name, "mcp__"), "__")
		if tool == "" {
			server, tool = "", server
		}
		args := append(json.RawMessage(nil), input...) // the line's bytes are not kept
		return func(r callResult) []*streams.Event {
			return one(&streams.Event{Action: "mcp_call", Server: server, Tool: tool, CallID: id, Arguments: args,
				Output: r.output(), IsError: r.isError})
		}
	}
	return func(callResult) []*streams.Event { return nil }
}

// applyEdit is what Claude Code's Edit tool did to the file it reported.
func applyEdit(content, old, new string, all bool) string {
	if old == "" {
		return content
	}
	if all {
		return strings.ReplaceAll(content, old, new)
	}
	return strings.Replace(content, old, new, 1)
}

var exitCodeRe = regexp.MustCompile(`(?m)^(?:Exit code|Process exited with code) (-?\d+)`)

// bashOutput is a command's output and, when the result states it, its exit code.
func bashOutput(r callResult) (string, *int) {
	var st struct {
		Stdout *string `json:"stdout"`
		Stderr string  `json:"stderr"`
	}
	var out string
	if json.Unmarshal(r.structured, &st) == nil && st.Stdout != nil {
		out = *st.Stdout
		if st.Stderr != "" {
			out += "\n" + st.Stderr
		}
	} else {
		out = r.output()
	}
	if !r.mayContain("xit code", "exited with code") {
		return out, nil // what exitCodeRe needs is not there: the result text is not decoded for it
	}
	return out, exitCode(r.output())
}

func exitCode(text string) *int {
	m := exitCodeRe.FindStringSubmatch(text)
	if m == nil {
		return nil
	}
	n, err := strconv.Atoi(m[1])
	if err != nil {
		return nil
	}
	return &n
}

// parseTime reads an RFC 3339 timestamp; zero when absent or malformed.
func parseTime(s string) time.Time {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}
	}
	if _, err := t.MarshalJSON(); err != nil || streams.CheckTime("at", t) != nil {
		return time.Time{} // outside the envelope's range of times: as if absent
	}
	return t.UTC()
}
