package apps

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	json "github.com/spinehq/spine/internal/fastjson"

	"github.com/spinehq/spine/streams"
)

// codexRollout reads a Codex rollout file. token_count events carry the
// session's running total (total_token_usage); Codex re-emits an event
// with an unchanged total, so a response is counted only when the total
// changes, and the session's usage is its last total, never a sum of
// last_token_usage. The model is the last turn_context's (or the
// token_count's own, where a version writes one). Prompts are event_msg
// user_message lines before 0.171 and, from 0.171, user messages whose
// content has provenance "user"; a call in namespace mcp__SERVER is an
// mcp_call with its arguments, completed (with whether it failed) by the
// McpToolCall item Codex writes. tool_search_call (Codex finding its
// deferred MCP tools) is protocol, not an action. Billing is "subscription"
// when the rollout names a ChatGPT sign-in (session_meta's
// creator_account_id, or a plan_type in token_count's rate_limits), else
// silent: no version writes that an API key was used, so metered is only
// what Options.Billing says.
type codexRollout struct {
	tr  *Translator
	fc  *fileCtx
	cur fileSession
	// prompt is the last prompt recorded and whether it came from an
	// event_msg user_message, so a version that writes a prompt both ways
	// records it once.
	prompt      string
	promptEvent bool
	// exec: the session was recorded from its exec --json log before
	// this rollout was read; the rollout adds nothing.
	exec bool
}

type rolloutLine struct {
	Timestamp string          `json:"timestamp"`
	Type      string          `json:"type"`
	Payload   json.RawMessage `json:"payload"`
}

type rolloutPayload struct {
	Type       string          `json:"type"`
	ID         string          `json:"id"`
	Timestamp  string          `json:"timestamp"`
	CWD        string          `json:"cwd"`
	Originator string          `json:"originator"`
	Model      string          `json:"model"`
	Effort     string          `json:"effort"`
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	Name       string          `json:"name"`
	Namespace  string          `json:"namespace"`
	Arguments  json.RawMessage `json:"arguments"` // a JSON string (function_call), an object (tool_search_call)
	Input      string          `json:"input"`
	CallID     string          `json:"call_id"`
	Output     json.RawMessage `json:"output"`
	Message    string          `json:"message"`
	Reason     string          `json:"reason"`
	Info       json.RawMessage `json:"info"`
	Item       json.RawMessage `json:"item"` // event_msg item_completed
	// CreatorAccountID (session_meta, 0.171 on) is the ChatGPT account
	// signed in; absent with an API key.
	CreatorAccountID string `json:"creator_account_id"`
	// RateLimits (token_count) name the ChatGPT plan, when signed in to one.
	RateLimits *struct {
		PlanType *string `json:"plan_type"`
	} `json:"rate_limits"`
	// Passthrough says where a message's content came from (0.171 on):
	// provenance "user" is what the person typed; injected context has
	// another.
	Passthrough *struct {
		Items []struct {
			Provenance struct {
				Type string `json:"type"`
			} `json:"provenance"`
		} `json:"content_item_metadata"`
	} `json:"internal_chat_message_metadata_passthrough"`
}

// rolloutRecord is a rollout line decoded in one pass (decodeRollout).
type rolloutRecord struct {
	Timestamp string          `json:"timestamp"`
	Type      string          `json:"type"`
	Payload   *rolloutPayload `json:"payload"`
}

// decodeRollout decodes a rollout line and its payload in one pass, or,
// when that fails or it has no payload object, in two, to say which part
// is wrong: a line's bytes are mostly its payload (a function's output),
// and a second pass over them was a tenth of a rollout's parsing. skip is
// the reason the line is passed over, "" when it is not.
func decodeRollout(data []byte, l *rolloutLine, pl *rolloutPayload) (skip string) {
	var r rolloutRecord
	if json.Unmarshal(data, &r) == nil && r.Payload != nil {
		l.Timestamp, l.Type, *pl = r.Timestamp, r.Type, *r.Payload
		return ""
	}
	if err := json.Unmarshal(data, l); err != nil {
		return "not a rollout line: " + err.Error()
	}
	if err := json.Unmarshal(l.Payload, pl); err != nil {
		return "rollout line without a payload object"
	}
	return ""
}

func (p *codexRollout) record(ctx context.Context, rec Record) (string, error) {
	var l rolloutLine
	var pl rolloutPayload
	if skip := decodeRollout(rec.Data, &l, &pl); skip != "" {
		return skip, nil
	}
	if l.Type == "session_meta" && pl.ID != "" {
		s := p.cur.set(p.tr.session(p.fc, pl.ID), pl.ID)
		if s == nil {
			return p.tr.endedSkip(pl.ID), nil
		}
		if s.format == FormatCodexExec {
			p.exec = true // only when its first values did not tell this file a rollout (see the importer's sessionFilesFirst)
			return fmt.Sprintf("session %s was recorded from its exec --json log, read before this rollout: "+
				"the rollout is not imported", pl.ID), nil
		}
		s.begun, s.run = true, pl.Originator == "codex_exec"
		s.billing = cmpOr(rolloutBilling(l.Type, &pl), s.billing)
		s.setWorkspace(pl.CWD)
		s.touch(parseTime(pl.Timestamp))
	}
	if p.exec {
		return "", nil
	}
	s := p.session()
	if s == nil {
		return p.tr.endedSkip(p.cur.gone), nil
	}
	at := parseTime(l.Timestamp)
	s.touch(at)
	at = s.when(at, p.fc)
	switch l.Type {
	case "session_meta", "compacted":
		return "", nil
	case "world_state", "token_usage_record":
		// Passed over on purpose (0.171 on): world_state is the context
		// Codex gives the model (environment, instructions, skills), not
		// work; token_usage_record is one response's usage, which the
		// running total on the token_count after it already counts.
		return "", nil
	case "turn_context":
		s.model, s.effort = s.tr.intern(cmpOr(pl.Model, s.model)), s.tr.intern(cmpOr(pl.Effort, s.effort))
		return "", nil
	case "response_item":
		return "", p.item(ctx, s, at, &pl)
	case "event_msg":
		return p.event(ctx, s, at, &pl)
	}
	return fmt.Sprintf("unknown line type %q", l.Type), nil
}

// rolloutBilling is the billing signal of one rollout line (its type and
// payload): "subscription" when it names a ChatGPT sign-in, else "".
func rolloutBilling(lineType string, pl *rolloutPayload) string {
	switch {
	case lineType == "session_meta" && pl.CreatorAccountID != "":
		return "subscription" // signed in with a ChatGPT account: its plan pays
	case lineType == "event_msg" && pl.Type == "token_count" && pl.RateLimits != nil &&
		pl.RateLimits.PlanType != nil && *pl.RateLimits.PlanType != "":
		return "subscription" // the rate limits of a ChatGPT plan
	}
	return ""
}

// CodexRolloutBilling is a Codex rollout's billing signal, as its
// translation reads it (see codexRollout): "subscription" when the rollout
// names a ChatGPT sign-in, else "" (silent: an API key is never told). It
// reads the lines up to the first signal and, of each, only what billing
// needs: spine run reads the rollout of the thread an exec --json run
// names, the exec log saying nothing of billing. An error is r's.
func CodexRolloutBilling(r io.Reader) (string, error) {
	lr := NewLineReader(bufio.NewReaderSize(r, 64<<10))
	for {
		rec, err := lr.Next()
		var le *LineError
		if errors.As(err, &le) {
			continue // a line the translation would skip too
		}
		if errors.Is(err, io.EOF) {
			return "", nil
		}
		if err != nil {
			return "", err
		}
		var l rolloutLine
		if json.Unmarshal(rec.Data, &l) != nil || l.Type != "session_meta" && l.Type != "event_msg" {
			continue
		}
		var pl rolloutPayload
		if json.Unmarshal(l.Payload, &pl) != nil {
			continue
		}
		if b := rolloutBilling(l.Type, &pl); b != "" {
			return b, nil
		}
	}
}

func (p *codexRollout) session() *session {
	if p.cur.known() {
		return p.cur.get()
	}
	id := fileSessionID(p.fc.path)
	return p.cur.set(p.tr.session(p.fc, id), id)
}

func (p *codexRollout) item(ctx context.Context, s *session, at time.Time, pl *rolloutPayload) error {
	switch pl.Type {
	case "message":
		if pl.Role == "user" {
			return p.userMessage(ctx, s, at, pl)
		}
		if pl.Role != "assistant" {
			return nil // developer instructions
		}
		for _, text := range messageTexts(pl.Content) {
			if err := s.prose(ctx, at, "stdout", text+"\n"); err != nil {
				return err
			}
		}
	case "function_call":
		args := functionArguments(pl.Arguments)
		if server, ok := strings.CutPrefix(pl.Namespace, "mcp__"); ok && pl.Name != "" {
			return s.call(ctx, pl.CallID, at, mcpCall(server, pl.Name, pl.CallID, args))
		}
		return s.call(ctx, pl.CallID, at, codexFunction(pl.Name, args))
	case "custom_tool_call":
		if pl.Name != "apply_patch" {
			return nil
		}
		evs := patchEvents(pl.Input)
		return s.call(ctx, pl.CallID, at, func(callResult) []*streams.Event { return evs })
	case "function_call_output", "custom_tool_call_output":
		text, code := toolOutput(pl.Output)
		return s.result(ctx, pl.CallID, at, callResult{text: text, exitCode: code})
	}
	return nil
}

// userMessage records a user message that is a prompt. Before 0.171 a
// rollout's user messages also hold injected context (environment,
// instructions) and the prompt comes as an event_msg user_message; from
// 0.171 only the message says, its content marked with provenance "user".
func (p *codexRollout) userMessage(ctx context.Context, s *session, at time.Time, pl *rolloutPayload) error {
	if pl.Passthrough == nil || len(pl.Passthrough.Items) == 0 {
		return nil
	}
	for _, it := range pl.Passthrough.Items {
		if it.Provenance.Type != "user" {
			return nil // context Codex added, not the person's words
		}
	}
	return p.userText(ctx, s, at, strings.Join(messageTexts(pl.Content), "\n"), false)
}

// userText records a prompt once, whether a version writes it as a
// message, as an event_msg user_message or both.
func (p *codexRollout) userText(ctx context.Context, s *session, at time.Time, text string, event bool) error {
	if text == p.prompt && event != p.promptEvent {
		p.prompt = "" // its other copy
		return nil
	}
	p.prompt, p.promptEvent = text, event
	if s.status == "cancelled" {
		s.status, s.err = "", "" // a new turn after an abort
	}
	return s.userText(ctx, at, text)
}

// messageTexts are a message's text parts (input_text, output_text).
func messageTexts(content json.RawMessage) []string {
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	_ = json.Unmarshal(content, &parts)
	var out []string
	for _, part := range parts {
		if part.Text != "" {
			out = append(out, part.Text)
		}
	}
	return out
}

// functionArguments is a function call's arguments: Codex writes them as
// a JSON string holding JSON; nil when they are not JSON spine can store.
func functionArguments(raw json.RawMessage) json.RawMessage {
	var text string
	if json.Unmarshal(raw, &text) == nil {
		raw = json.RawMessage(text)
	}
	if len(raw) == 0 || streams.CheckRawJSON("arguments", raw) != nil {
		return nil
	}
	return raw
}

// mcpCall is a call to an MCP tool (a function call in namespace
// mcp__SERVER). Its result is the McpToolCall item Codex writes when the
// call completes (with isError), else the function_call_output.
func mcpCall(server, tool, callID string, args json.RawMessage) func(callResult) []*streams.Event {
	return func(r callResult) []*streams.Event {
		return []*streams.Event{{Action: "mcp_call", Server: server, Tool: tool, CallID: callID, Arguments: args,
			Output: r.text, IsError: r.isError}}
	}
}

// codexFunction maps a Codex function call to a cockpit action: the shell
// tools are commands; others record nothing.
func codexFunction(name string, arguments json.RawMessage) func(callResult) []*streams.Event {
	var args struct {
		Cmd     string          `json:"cmd"`
		Command json.RawMessage `json:"command"`
	}
	_ = json.Unmarshal(arguments, &args)
	cmd := args.Cmd
	if cmd == "" {
		var argv []string
		if json.Unmarshal(args.Command, &argv) == nil {
			cmd = strings.Join(argv, " ")
		} else {
			_ = json.Unmarshal(args.Command, &cmd)
		}
	}
	if (name != "shell" && name != "exec_command" && name != "local_shell") || cmd == "" {
		return func(callResult) []*streams.Event { return nil }
	}
	return func(r callResult) []*streams.Event {
		return []*streams.Event{{Action: "command", Command: cmd, Output: r.text, ExitCode: r.exitCode}}
	}
}

func (p *codexRollout) event(ctx context.Context, s *session, at time.Time, pl *rolloutPayload) (string, error) {
	switch pl.Type {
	case "token_count":
		s.billing = cmpOr(rolloutBilling("event_msg", pl), s.billing)
		return p.tokens(s, at, pl), nil
	case "user_message":
		return "", p.userText(ctx, s, at, pl.Message, true)
	case "item_completed":
		return "", p.completed(ctx, s, at, pl.Item)
	case "turn_aborted":
		s.status, s.err = "cancelled", "turn_aborted: "+pl.Reason
	}
	return "", nil // agent_message, agent_reasoning…: the response items carry them
}

// completed reads an event_msg item_completed (0.171 on): where it says
// more than the response items it completes the call. A CommandExecution
// has the command's own output and exit code (the function_call_output
// wraps them in Codex's notes to the model); a FileChange has each file's
// absolute path and an added file's content (the patch has paths relative
// to the workspace); an McpToolCall has the tool's result and whether it
// failed. The others (the user's and agent's messages, reasoning) repeat
// the response items.
func (p *codexRollout) completed(ctx context.Context, s *session, at time.Time, raw json.RawMessage) error {
	var it completedItem
	if json.Unmarshal(raw, &it) != nil || it.ID == "" {
		return nil
	}
	switch it.Type {
	case "CommandExecution":
		if it.ExitCode == nil || it.Status != "completed" && it.Status != "failed" {
			return nil
		}
		return s.result(ctx, it.ID, at, callResult{text: it.Output, exitCode: it.ExitCode})
	case "FileChange":
		if it.Status != "completed" {
			return nil
		}
		return s.replace(ctx, it.ID, at, fileChanges(it.Changes))
	case "McpToolCall":
		r := callResult{isError: it.Status == "failed"}
		switch {
		case it.Result != nil:
			r.text = strings.Join(messageTexts(it.Result.Content), "\n")
			r.isError = r.isError || it.Result.IsError
		case len(it.Error) > 0 && string(it.Error) != "null":
			r.text, r.isError = string(it.Error), true
		}
		return s.result(ctx, it.ID, at, r)
	}
	return nil
}

// completedItem is an event_msg item_completed's item.
type completedItem struct {
	Type     string `json:"type"`
	ID       string `json:"id"` // the call's call_id
	Status   string `json:"status"`
	Output   string `json:"aggregated_output"`
	ExitCode *int   `json:"exit_code"`
	Changes  map[string]struct {
		Type    string  `json:"type"`
		Content *string `json:"content"`
	} `json:"changes"`
	Result *struct {
		Content json.RawMessage `json:"content"`
		IsError bool            `json:"isError"`
	} `json:"result"`
	Error json.RawMessage `json:"error"`
}

// fileChanges are a FileChange's writes, by path: an added file with its
// content, an updated one whose content the change does not carry as
// unknown; a deleted file is not a write.
func fileChanges(changes map[string]struct {
	Type    string  `json:"type"`
	Content *string `json:"content"`
}) []*streams.Event {
	var evs []*streams.Event
	for _, path := range slices.Sorted(maps.Keys(changes)) {
		c := changes[path]
		switch {
		case c.Type == "delete" || path == "":
		case c.Type == "add" && c.Content != nil:
			evs = append(evs, &streams.Event{Action: "file_write", Path: path, Content: *c.Content})
		default:
			evs = append(evs, &streams.Event{Action: "file_write", Path: path, ContentUnknown: true})
		}
	}
	return evs
}

func (p *codexRollout) tokens(s *session, at time.Time, pl *rolloutPayload) string {
	if len(pl.Info) == 0 || string(pl.Info) == "null" {
		return ""
	}
	var info struct {
		Total *codexUsage `json:"total_token_usage"`
		Last  *codexUsage `json:"last_token_usage"`
		Model string      `json:"model"`
	}
	if err := json.Unmarshal(pl.Info, &info); err != nil {
		return "token_count info: " + err.Error()
	}
	if info.Total == nil {
		return "token_count without total_token_usage"
	}
	s.begun = true
	if !s.runningTotal(at, info.Total.tokens()) {
		return "" // re-emitted with an unchanged total: no new response
	}
	s.days[s.day(at)].responses++
	s.responses++
	s.model = s.tr.intern(cmpOr(info.Model, s.model))
	s.raw = nil
	s.addRaw(pl.Info) // the last report is the session's total
	return ""
}

func (p *codexRollout) done(context.Context) error { return nil }

func (p *codexRollout) current() *session { return p.cur.get() }
