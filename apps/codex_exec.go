package apps

import (
	"context"
	"fmt"
	"strings"
	"time"

	json "github.com/spinehq/spine/internal/fastjson"

	"github.com/spinehq/spine/streams"
)

// codexExec reads `codex exec --json`. The stream has no model, no cost
// and no times: the session's times are the file's modification time, its
// model is unknown (""), its cost absent. Each turn.completed is one
// report (a turn, which may have taken several model responses: the log
// does not say) and its usage is the thread's running total: a run of
// `codex exec resume` reports the earlier runs' usage too, so the
// session's usage is its last total, never a sum (see runningTotal). A
// stream that ends inside a turn was aborted: the session ends failed,
// error "stream_incomplete".
//
// A thread whose rollout is in the same import is recorded from the
// rollout alone (it has every response, the times, the model and the
// prompts); its exec --json lines add nothing. Import reads one-file output
// after the rollouts (see the importer's sessionFilesFirst), so the rollout comes first
// whatever the order of the paths.
type codexExec struct {
	tr     *Translator
	fc     *fileCtx
	cur    fileSession
	inTurn bool
	// rollout: the current thread is recorded from its rollout.
	rollout bool
}

type codexExecLine struct {
	Type     string          `json:"type"`
	ThreadID string          `json:"thread_id"`
	Usage    json.RawMessage `json:"usage"`
	Error    *struct {
		Message string `json:"message"`
	} `json:"error"`
	Message string    `json:"message"`
	Item    *execItem `json:"item"`
}

type execItem struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Text     string `json:"text"`
	Command  string `json:"command"`
	Output   string `json:"aggregated_output"`
	ExitCode *int   `json:"exit_code"`
	Status   string `json:"status"`
	Changes  []struct {
		Path string `json:"path"`
		Kind string `json:"kind"`
	} `json:"changes"`
	Server    string          `json:"server"`
	Tool      string          `json:"tool"`
	Arguments json.RawMessage `json:"arguments"`
	Result    json.RawMessage `json:"result"`
	Error     json.RawMessage `json:"error"`
	Query     string          `json:"query"`
}

func (p *codexExec) record(ctx context.Context, rec Record) (string, error) {
	var l codexExecLine
	if err := json.Unmarshal(rec.Data, &l); err != nil {
		return "not a codex exec event: " + err.Error(), nil
	}
	if l.Type == "thread.started" && l.ThreadID != "" {
		s := p.cur.set(p.tr.session(p.fc, l.ThreadID), l.ThreadID)
		if s == nil {
			return p.tr.endedSkip(l.ThreadID), nil
		}
		p.rollout = s.format == FormatCodexRollout
		if !p.rollout {
			s.run, s.begun = true, true
		}
		return "", nil
	}
	if p.rollout {
		return "", nil // the thread's rollout has it
	}
	s := p.session()
	if s == nil {
		return p.tr.endedSkip(p.cur.gone), nil
	}
	s.touch(rec.At)
	at := s.when(rec.At, p.fc)
	switch l.Type {
	case "turn.started":
		p.inTurn = true
	case "turn.completed":
		p.inTurn = false
		var u codexUsage
		if err := json.Unmarshal(l.Usage, &u); err != nil || len(l.Usage) == 0 {
			return "turn.completed without usage", nil
		}
		s.runningTotal(at, u.tokens())
		s.responses++
		s.days[s.day(at)].responses++
		s.addRaw(l.Usage)
	case "turn.failed":
		p.inTurn = false
		s.status, s.err = "failed", "turn_failed"
		if l.Error != nil {
			s.err += ": " + l.Error.Message
		}
	case "error":
		s.err = cmpOr(s.err, l.Message)
		return "", s.prose(ctx, at, "stderr", l.Message+"\n")
	case "item.started":
		// An action waits for its item.completed; one that never comes (the
		// run died inside it) is recorded as having no result.
		if it := l.Item; it != nil && it.ID != "" && p.action(it) != nil {
			return "", s.call(ctx, p.callID(it), at, func(callResult) []*streams.Event { return p.action(it) })
		}
	case "item.updated":
		return "", nil // the completed item is the action
	case "item.completed":
		if l.Item == nil {
			return "item.completed without item", nil
		}
		return "", p.item(ctx, s, at, l.Item)
	default:
		return fmt.Sprintf("unknown event type %q", l.Type), nil
	}
	return "", nil
}

func (p *codexExec) session() *session {
	if p.cur.known() {
		return p.cur.get()
	}
	id := fileSessionID(p.fc.path)
	s := p.cur.set(p.tr.session(p.fc, id), id)
	if s != nil {
		s.run = true
	}
	return s
}

// callID is the pending-call key of an exec item: item ids restart at
// item_0 in every process, so the file is part of it.
func (p *codexExec) callID(it *execItem) string { return "exec:" + p.fc.path + ":" + it.ID }

// action is the events of a command, file change or MCP call item (nil for
// any other item, or one that names no command, path or tool).
func (p *codexExec) action(it *execItem) []*streams.Event {
	switch it.Type {
	case "command_execution":
		if it.Command == "" {
			return nil
		}
		return []*streams.Event{{Action: "command", Command: it.Command, ExitCode: it.ExitCode, Output: it.Output}}
	case "file_change":
		var evs []*streams.Event
		for _, c := range it.Changes {
			if c.Kind == "delete" || c.Path == "" {
				continue
			}
			// exec --json names the file, never its content
			evs = append(evs, &streams.Event{Action: "file_write", Path: c.Path, ContentUnknown: true})
		}
		return evs
	case "mcp_tool_call":
		if it.Tool == "" {
			return nil
		}
		out, failed := mcpResult(it.Result), it.Status == "failed"
		if len(it.Error) > 0 && string(it.Error) != "null" {
			out, failed = string(it.Error), true
		}
		var args json.RawMessage
		if len(it.Arguments) > 0 && string(it.Arguments) != "null" && streams.CheckRawJSON("arguments", it.Arguments) == nil {
			args = it.Arguments
		}
		return []*streams.Event{{Action: "mcp_call", Server: it.Server, Tool: it.Tool, CallID: it.ID,
			Arguments: args, Output: out, IsError: failed}}
	}
	return nil
}

func (p *codexExec) item(ctx context.Context, s *session, at time.Time, it *execItem) error {
	if evs := p.action(it); evs != nil || it.Type == "file_change" {
		if s.waiting(p.callID(it)) {
			return s.replace(ctx, p.callID(it), at, evs) // its item.started is answered
		}
		for _, ev := range evs {
			if err := s.event(ctx, at, ev); err != nil {
				return err
			}
		}
		return nil
	}
	switch it.Type {
	case "agent_message":
		return s.prose(ctx, at, "stdout", it.Text+"\n")
	case "web_search":
		return s.prose(ctx, at, "stdout", "[web search] "+strings.TrimSpace(it.Query)+"\n")
	case "error":
		return s.prose(ctx, at, "stderr", it.Text+"\n")
	}
	return nil // reasoning, todo_list: not prose, not actions
}

// mcpResult is an MCP call's result as text: its content's text parts,
// else the result as written.
func mcpResult(raw json.RawMessage) string {
	var r struct {
		Content json.RawMessage `json:"content"`
	}
	if json.Unmarshal(raw, &r) == nil {
		if texts := messageTexts(r.Content); len(texts) > 0 {
			return strings.Join(texts, "\n")
		}
	}
	if string(raw) == "null" {
		return ""
	}
	return string(raw)
}

func (p *codexExec) done(context.Context) error {
	if s := p.cur.get(); p.inTurn && !p.rollout && s != nil {
		s.status, s.err = "failed", "stream_incomplete: the stream ended inside a turn (no turn.completed)"
	}
	return nil
}

func (p *codexExec) current() *session { return p.cur.get() }
