package importer

import (
	"context"
	"fmt"
	json "github.com/spinehq/spine/internal/fastjson"
	"time"
)

// claudeStream reads `claude -p --output-format stream-json` (and json,
// which is the result object alone). Each content block of a message comes
// as its own assistant line repeating message.id with a partial usage, so
// a session's tokens are its result lines' usage when it has any (the app's
// own total), else the final usage of each distinct message.
type claudeStream struct {
	imp *Importer
	fc  *fileCtx
	cur fileSession
}

type claudeStreamLine struct {
	Type          string          `json:"type"`
	Subtype       string          `json:"subtype"`
	SessionID     string          `json:"session_id"`
	Timestamp     string          `json:"timestamp"`
	RequestID     string          `json:"request_id"`
	CWD           string          `json:"cwd"`
	Model         string          `json:"model"`
	Message       *claudeMessage  `json:"message"`
	ToolUseResult json.RawMessage `json:"tool_use_result"`
	IsError       bool            `json:"is_error"`
	Result        string          `json:"result"`
	TotalCostUSD  *float64        `json:"total_cost_usd"`
	Usage         *claudeUsage    `json:"usage"`
}

func (p *claudeStream) record(ctx context.Context, rec record) (string, error) {
	var l claudeStreamLine
	if err := json.Unmarshal(rec.data, &l); err != nil {
		return "not a stream-json event: " + err.Error(), nil
	}
	s := p.sessionFor(l.SessionID)
	if s == nil {
		return endedSkip(p.cur.gone), nil
	}
	at := parseTime(l.Timestamp)
	s.touch(at)
	at = s.when(at, p.fc)
	switch l.Type {
	case "system":
		if l.Subtype == "init" {
			s.setWorkspace(l.CWD)
		}
		if s.model == "" {
			s.model = s.imp.intern(l.Model)
		}
		return "", nil
	case "assistant":
		if l.Message == nil {
			return "assistant event without message", nil
		}
		return "", s.assistant(ctx, at, l.Message, l.RequestID)
	case "user":
		if l.Message == nil {
			return "user event without message", nil
		}
		return "", s.user(ctx, at, l.Message, l.ToolUseResult)
	case "result":
		return "", p.result(ctx, s, at, &l, rec.data)
	case "stream_event":
		return "", nil // partial deltas; the whole message follows as an assistant event
	}
	return fmt.Sprintf("unknown event type %q", l.Type), nil
}

func (p *claudeStream) sessionFor(id string) *session {
	if id == "" && p.cur.known() {
		return p.cur.get()
	}
	if id == "" {
		id = fileSessionID(p.fc.path)
	}
	s := p.cur.set(p.imp.session(p.fc, id), id)
	if s != nil {
		s.run = true
	}
	return s
}

// result is the end of one query: its usage adds to the session's report,
// its total_cost_usd (a running total for the process) replaces the last.
func (p *claudeStream) result(ctx context.Context, s *session, at time.Time, l *claudeStreamLine, data []byte) error {
	s.begun = true
	var raw map[string]json.RawMessage
	_ = json.Unmarshal(data, &raw)
	keep := map[string]json.RawMessage{}
	for _, k := range []string{"usage", "modelUsage", "total_cost_usd"} {
		if v, ok := raw[k]; ok {
			keep[k] = v
		}
	}
	if len(keep) > 0 {
		b, _ := json.Marshal(keep)
		s.addRaw(b)
	}
	if l.Usage != nil {
		s.addReport(at, l.Usage.tokens())
	}
	if l.TotalCostUSD != nil && *l.TotalCostUSD >= 0 {
		c := *l.TotalCostUSD
		s.cost = &c
	}
	s.status, s.err = "done", ""
	if l.IsError {
		s.status, s.err = "failed", cmpOr(l.Subtype, "error")
	}
	if !s.sawProse && l.Result != "" { // --output-format json: the answer is only here
		return s.prose(ctx, at, "stdout", l.Result+"\n")
	}
	return nil
}

func (p *claudeStream) done(context.Context) error { return nil }
