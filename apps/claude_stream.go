package apps

import (
	"bufio"
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	json "github.com/spinehq/spine/internal/fastjson"
	"github.com/spinehq/spine/streams"
)

// claudeStream reads `claude -p --output-format stream-json` (and json,
// which is the result object alone). Each content block of a message comes
// as its own assistant line repeating message.id with a partial usage, and
// a subagent's responses are mostly missing, so a session's tokens are what
// its result lines report (see claudeRuns) when it has any, else the final
// usage of each distinct message.
type claudeStream struct {
	tr  *Translator
	fc  *fileCtx
	cur fileSession
	// results are the sessions this file has a result line of.
	results map[*session]bool
	// first and last are the earliest and latest times of the file's
	// lines (first read ahead, see time).
	first, last time.Time
	scanned     bool
}

// time is a line's time. Stream-json lines mostly carry none (only user
// lines, tool results and a subagent's prompt, have a timestamp): a line
// without one takes the time of the file's last line that had one, or
// before any, the first the file has (read ahead), so the session's start
// and its responses' days are times the output carries. Zero when the file
// has no time at all (see session.when).
func (p *claudeStream) time(stamp string) time.Time {
	if at := parseTime(stamp); !at.IsZero() {
		if at.After(p.last) {
			p.last = at
		}
		return at
	}
	if !p.scanned && !p.tr.opts.Live { // a live source is no file to read ahead in
		p.scanned, p.first = true, firstTimestamp(p.fc.path)
	}
	return cmp.Or(p.last, p.first)
}

// firstTimestamp is the first timestamp of a stream-json file's lines,
// zero when none has one or the file cannot be read again.
func firstTimestamp(path string) time.Time {
	f, err := os.Open(path)
	if err != nil {
		return time.Time{}
	}
	defer f.Close()
	rr := NewRecordReader(bufio.NewReaderSize(f, 1<<20))
	for {
		rec, err := rr.Next()
		var le *LineError
		switch {
		case errors.As(err, &le) && !le.Fatal:
			continue
		case err != nil:
			return time.Time{}
		}
		var l struct {
			Timestamp string `json:"timestamp"`
		}
		if json.Unmarshal(rec.Data, &l) == nil {
			if at := parseTime(l.Timestamp); !at.IsZero() {
				return at
			}
		}
	}
}

// resulted reports whether the file had a result line of s before, and
// notes that it has one now.
func (p *claudeStream) resulted(s *session) bool {
	if p.results == nil {
		p.results = map[*session]bool{}
	}
	had := p.results[s]
	p.results[s] = true
	return had
}

type claudeStreamLine struct {
	Type          string          `json:"type"`
	Subtype       string          `json:"subtype"`
	SessionID     string          `json:"session_id"`
	Timestamp     string          `json:"timestamp"`
	UUID          string          `json:"uuid"`
	RequestID     string          `json:"request_id"`
	CWD           string          `json:"cwd"`
	APIKeySource  string          `json:"apiKeySource"`
	Model         string          `json:"model"`
	Message       *claudeMessage  `json:"message"`
	ToolUseResult json.RawMessage `json:"tool_use_result"`
	// ParentToolUseID names the Task call a subagent's line belongs to.
	ParentToolUseID string       `json:"parent_tool_use_id"`
	IsError         bool         `json:"is_error"`
	Result          string       `json:"result"`
	NumTurns        int          `json:"num_turns"`
	TotalCostUSD    *float64     `json:"total_cost_usd"`
	Usage           *claudeUsage `json:"usage"`
	// ModelUsage is the process's running total per model, every thread
	// and side request included (result lines of 2.1 and later).
	ModelUsage map[string]claudeModelUsage `json:"modelUsage"`
}

// claudeModelUsage is one model's share of result.modelUsage: claudeUsage
// under the camelCase names modelUsage spells its counts with (the fields
// in the same order, so one converts to the other).
type claudeModelUsage struct {
	Input       int64 `json:"inputTokens"`
	Output      int64 `json:"outputTokens"`
	CacheCreate int64 `json:"cacheCreationInputTokens"`
	CacheRead   int64 `json:"cacheReadInputTokens"`
}

// modelUsageTokens sums result.modelUsage over its models; ok is false
// when the line has none.
func (l *claudeStreamLine) modelUsageTokens() (t streams.Usage, ok bool) {
	for _, u := range l.ModelUsage {
		t.Add((*claudeUsage)(&u).tokens())
	}
	return t, len(l.ModelUsage) > 0
}

func (p *claudeStream) record(ctx context.Context, rec Record) (string, error) {
	var l claudeStreamLine
	if err := json.Unmarshal(rec.Data, &l); err != nil {
		return "not a stream-json event: " + err.Error(), nil
	}
	s := p.sessionFor(l.SessionID)
	if s == nil {
		return p.tr.endedSkip(p.cur.gone), nil
	}
	if p.seen(s, &l) {
		return "", nil
	}
	at := p.time(l.Timestamp)
	if parseTime(l.Timestamp).IsZero() && !rec.At.IsZero() {
		at = rec.At // read live: the line was written just now
	}
	s.touch(at)
	at = s.when(at, p.fc)
	switch l.Type {
	case "system":
		if l.Subtype == "init" {
			s.setWorkspace(l.CWD)
			s.claudeRuns().signal(s, claudeBilling(l.APIKeySource))
		}
		if s.model == "" {
			s.model = s.tr.intern(claudeModelName(l.Model))
		}
		return "", nil
	case "assistant":
		if l.Message == nil {
			return "assistant event without message", nil
		}
		s.claudeRuns().shown(l.Message)
		return "", s.assistant(ctx, at, l.Message, l.RequestID)
	case "user":
		if l.Message == nil {
			return "user event without message", nil
		}
		if l.ParentToolUseID != "" {
			if had, err := p.subagentPrompt(ctx, s, at, l.Message); had || err != nil {
				return "", err
			}
		}
		return "", s.user(ctx, at, l.Message, l.ToolUseResult)
	case "result":
		return "", p.result(ctx, s, at, &l, rec.Data)
	case "stream_event":
		return "", nil // partial deltas; the whole message follows as an assistant event
	}
	return fmt.Sprintf("unknown event type %q", l.Type), nil
}

// subagentPrompt records the text of a subagent's user line, the task the
// main thread gave it, as prose marked as a prompt (as the subagent's
// transcript gives it): never the person's prompt, which print mode does
// not echo. It reports whether the line had text; one without (tool
// results) is an ordinary user line.
func (p *claudeStream) subagentPrompt(ctx context.Context, s *session, at time.Time, m *claudeMessage) (bool, error) {
	had := false
	for _, b := range blocks(m.Content) {
		if b.Type == "text" && b.Text != "" {
			had = true
			if err := s.prose(ctx, at, "stdout", "\n> "+b.Text+"\n"); err != nil {
				return true, err
			}
		}
	}
	return had, nil
}

// seen reports whether the line was imported already, and remembers it.
// Stream-json lines carry the uuid of the same line in the session's
// transcript: a line with text already read there (or in another copy of
// the log) is passed over, as the transcript passes over its own repeats;
// so is a result already read (its usage and cost would count twice).
func (p *claudeStream) seen(s *session, l *claudeStreamLine) bool {
	switch {
	case l.Type == "result":
		return p.tr.seenLine(s, l.UUID)
	case l.Message != nil && mayHaveText(l.Message.Content):
		return p.tr.seenLine(s, l.UUID)
	}
	return false
}

func (p *claudeStream) sessionFor(id string) *session {
	if id == "" && p.cur.known() {
		return p.cur.get()
	}
	if id == "" {
		id = fileSessionID(p.fc.path)
	}
	s := p.cur.set(p.tr.session(p.fc, id), id)
	if s != nil {
		s.run = true
	}
	return s
}

// result is the end of one query: its usage and cost go to the session's
// report (see claudeRuns).
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
	s.claudeRuns().report(s, at, l, p.resulted(s))
	s.status, s.err = "done", ""
	if l.IsError {
		s.status, s.err = "failed", cmpOr(l.Subtype, "error")
	}
	return p.answer(ctx, s, at, l)
}

// answer records what only a result line holds when its process showed
// no response of its own (--output-format json: the result object alone):
// its num_turns as the main thread's responses, its modelUsage's model,
// and its text as the answer. A session read from its transcript has
// them there (transcripts are read first, see the importer's sessionFilesFirst).
func (p *claudeStream) answer(ctx context.Context, s *session, at time.Time, l *claudeStreamLine) error {
	r := s.claudeRuns()
	responses, text := r.responses, r.text
	r.responses, r.text = 0, false // the next result is the next query's
	if s.format == FormatClaudeTranscript {
		return nil
	}
	if s.model == "" {
		s.model = s.tr.intern(l.mainModel())
	}
	if responses == 0 && l.NumTurns > 0 {
		s.responses += l.NumTurns
		s.days[s.day(at)].responses += l.NumTurns
	}
	if !text && l.Result != "" {
		return s.prose(ctx, at, "stdout", l.Result+"\n")
	}
	return nil
}

// mainModel is the model of result.modelUsage with the most output (the
// main thread's, as a rule), "" without modelUsage.
func (l *claudeStreamLine) mainModel() string {
	var best string
	var most int64 = -1
	for name, u := range l.ModelUsage {
		if u.Output > most || u.Output == most && name < best {
			best, most = name, u.Output
		}
	}
	return claudeModelName(best)
}

// claudeModelName is a model as the API names it: Claude Code's own
// reports (system/init, result.modelUsage) mark a context variant in
// brackets ("claude-opus-4-8[1m]"), its responses name the model alone.
func claudeModelName(m string) string {
	if i := strings.IndexByte(m, '['); i > 0 && strings.HasSuffix(m, "]") {
		return m[:i]
	}
	return m
}

func (p *claudeStream) done(context.Context) error { return nil }

func (p *claudeStream) current() *session { return p.cur.get() }
