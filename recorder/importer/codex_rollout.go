package importer

import (
	"context"
	"fmt"
	json "github.com/spinehq/spine/internal/fastjson"
	"strings"
	"time"

	"github.com/spinehq/spine/streams"
)

// codexRollout reads a Codex rollout file. token_count events carry the
// session's running total (total_token_usage); Codex re-emits an event
// with an unchanged total, so a response is counted only when the total
// changes, and the session's usage is its last total, never a sum of
// last_token_usage. The model is the last turn_context's (or the
// token_count's own, where a version writes one).
type codexRollout struct {
	imp *Importer
	fc  *fileCtx
	cur fileSession
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
	Arguments  string          `json:"arguments"`
	Input      string          `json:"input"`
	CallID     string          `json:"call_id"`
	Output     json.RawMessage `json:"output"`
	Message    string          `json:"message"`
	Reason     string          `json:"reason"`
	Info       json.RawMessage `json:"info"`
}

func (p *codexRollout) record(ctx context.Context, rec record) (string, error) {
	var l rolloutLine
	var pl rolloutPayload
	if err := json.Unmarshal(rec.data, &l); err != nil {
		return "not a rollout line: " + err.Error(), nil
	}
	if err := json.Unmarshal(l.Payload, &pl); err != nil {
		return "rollout line without a payload object", nil
	}
	if l.Type == "session_meta" && pl.ID != "" {
		s := p.cur.set(p.imp.session(p.fc, pl.ID), pl.ID)
		if s == nil {
			return endedSkip(pl.ID), nil
		}
		s.begun, s.run = true, pl.Originator == "codex_exec"
		s.setWorkspace(pl.CWD)
		s.touch(parseTime(pl.Timestamp))
	}
	s := p.session()
	if s == nil {
		return endedSkip(p.cur.gone), nil
	}
	at := parseTime(l.Timestamp)
	s.touch(at)
	at = s.when(at, p.fc)
	switch l.Type {
	case "session_meta", "compacted":
		return "", nil
	case "turn_context":
		s.model, s.effort = s.imp.intern(cmpOr(pl.Model, s.model)), s.imp.intern(cmpOr(pl.Effort, s.effort))
		return "", nil
	case "response_item":
		return "", p.item(ctx, s, at, &pl)
	case "event_msg":
		return p.event(ctx, s, at, &pl)
	}
	return fmt.Sprintf("unknown line type %q", l.Type), nil
}

func (p *codexRollout) session() *session {
	if p.cur.known() {
		return p.cur.get()
	}
	id := fileSessionID(p.fc.path)
	return p.cur.set(p.imp.session(p.fc, id), id)
}

func (p *codexRollout) item(ctx context.Context, s *session, at time.Time, pl *rolloutPayload) error {
	switch pl.Type {
	case "message":
		if pl.Role != "assistant" {
			return nil // user turns come as event_msg user_message, without injected context
		}
		var parts []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		}
		_ = json.Unmarshal(pl.Content, &parts)
		for _, part := range parts {
			if part.Text != "" {
				if err := s.prose(ctx, at, "stdout", part.Text+"\n"); err != nil {
					return err
				}
			}
		}
	case "function_call":
		return s.call(ctx, pl.CallID, at, codexFunction(pl.Name, pl.Arguments))
	case "custom_tool_call":
		if pl.Name != "apply_patch" {
			return nil
		}
		evs := patchEvents(pl.Input)
		return s.call(ctx, pl.CallID, at, func(callResult) []*streams.Event { return evs })
	case "function_call_output", "custom_tool_call_output":
		text, _ := toolOutput(pl.Output)
		return s.result(ctx, pl.CallID, at, callResult{text: text, structured: pl.Output})
	}
	return nil
}

// codexFunction maps a Codex function call to a cockpit action: the shell
// tools are commands; others record nothing.
func codexFunction(name, arguments string) func(callResult) []*streams.Event {
	var args struct {
		Cmd     string          `json:"cmd"`
		Command json.RawMessage `json:"command"`
	}
	_ = json.Unmarshal([]byte(arguments), &args)
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
		out, code := toolOutput(r.structured)
		return []*streams.Event{{Action: "command", Command: cmd, Output: out, ExitCode: code}}
	}
}

func (p *codexRollout) event(ctx context.Context, s *session, at time.Time, pl *rolloutPayload) (string, error) {
	switch pl.Type {
	case "token_count":
		return p.tokens(s, at, pl), nil
	case "user_message":
		if s.status == "cancelled" {
			s.status, s.err = "", "" // a new turn after an abort
		}
		return "", s.userText(ctx, at, pl.Message)
	case "turn_aborted":
		s.status, s.err = "cancelled", "turn_aborted: "+pl.Reason
	}
	return "", nil // agent_message, agent_reasoning…: the response items carry them
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
	s.model = s.imp.intern(cmpOr(info.Model, s.model))
	s.raw = nil
	s.addRaw(pl.Info) // the last report is the session's total
	return ""
}

func (p *codexRollout) done(context.Context) error { return nil }
