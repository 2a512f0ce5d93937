package importer

import (
	"context"
	"fmt"
	json "github.com/spinehq/spine/internal/fastjson"
	"time"
)

// claudeStream reads `claude -p --output-format stream-json` (and json,
// which is the result object alone). Each content block of a message comes
// as its own assistant line repeating message.id with a partial usage, and
// a subagent's responses are mostly missing, so a session's tokens are what
// its result lines report (see claudeRuns) when it has any, else the final
// usage of each distinct message.
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
	// ModelUsage is the process's running total per model, every thread
	// and side request included (result lines of 2.1 and later).
	ModelUsage map[string]claudeModelUsage `json:"modelUsage"`
}

// claudeModelUsage is one model's share of result.modelUsage.
type claudeModelUsage struct {
	Input       int64 `json:"inputTokens"`
	Output      int64 `json:"outputTokens"`
	CacheRead   int64 `json:"cacheReadInputTokens"`
	CacheCreate int64 `json:"cacheCreationInputTokens"`
}

// modelUsageTokens sums result.modelUsage over its models; ok is false
// when the line has none.
func (l *claudeStreamLine) modelUsageTokens() (t Tokens, ok bool) {
	for _, u := range l.ModelUsage {
		t.add(Tokens{Input: u.Input, Output: u.Output, CacheRead: u.CacheRead, CacheWrite: u.CacheCreate})
	}
	return t, len(l.ModelUsage) > 0
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

// result is the end of one query: what it reports goes to the session's
// report (see claudeRuns.report); its total_cost_usd (a running total for
// the process) replaces the last.
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
	s.claudeRuns().report(s, at, l)
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

// claudeRuns are the processes a Claude session's stream-json results
// reported, in the order read. A result's usage is its query's, the main
// thread's alone (a Task subagent's responses are not in it); its
// modelUsage is every model's running total for the process, subagents
// and side requests included, so a session's report is, per process, its
// last modelUsage, summed over processes. A result continues the previous
// one's process when its modelUsage holds the previous one's plus its own
// query's usage (a new process starts again from its own query); a result
// without modelUsage (before 2.1) adds its usage.
type claudeRuns struct {
	procs []claudeProc
}

// claudeProc is one process's running total, as its last result reported it.
type claudeProc struct {
	tokens Tokens
}

// claudeRuns is the session's, made on first use.
func (s *session) claudeRuns() *claudeRuns {
	if s.claude == nil {
		s.claude = &claudeRuns{}
	}
	return s.claude
}

// report adds what one result line reports to the session's report.
func (r *claudeRuns) report(s *session, at time.Time, l *claudeStreamLine) {
	total, ok := l.modelUsageTokens()
	if !ok {
		if l.Usage != nil {
			s.addReport(at, l.Usage.tokens())
		}
		return
	}
	if n := len(r.procs); n > 0 && continues(r.procs[n-1].tokens, total, l.Usage.tokens()) {
		last := &r.procs[n-1]
		delta := total
		delta.sub(last.tokens)
		last.tokens = total
		s.addReport(at, delta)
		return
	}
	r.procs = append(r.procs, claudeProc{tokens: total})
	s.addReport(at, total)
}

// continues reports whether a running total is a later one of the process
// whose last total was prev: it holds prev and its own query's usage.
func continues(prev, total, query Tokens) bool {
	return total.Input >= prev.Input+query.Input && total.Output >= prev.Output+query.Output &&
		total.CacheRead >= prev.CacheRead+query.CacheRead && total.CacheWrite >= prev.CacheWrite+query.CacheWrite
}
