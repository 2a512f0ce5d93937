package apps

import (
	"strings"
	"time"

	json "github.com/spinehq/spine/internal/fastjson"

	"github.com/spinehq/spine/streams"
)

// codexUsage is Codex's token report. input_tokens includes the cached
// ones and output_tokens includes the reasoning ones.
type codexUsage struct {
	Input     int64 `json:"input_tokens"`
	Cached    int64 `json:"cached_input_tokens"`
	Output    int64 `json:"output_tokens"`
	Reasoning int64 `json:"reasoning_output_tokens"`
}

// tokens normalises Codex usage to spine's convention: input without the
// cached part (as Claude reports it), cached as cache reads, output as
// reported (reasoning included) and reasoning beside it, for information.
func (u codexUsage) tokens() streams.Usage {
	cached := min(u.Cached, u.Input)
	return streams.Usage{InputTokens: u.Input - cached, OutputTokens: u.Output, CacheReadTokens: cached,
		ReasoningTokens: u.Reasoning}
}

// runningTotal takes one report of a thread's running total (a rollout's
// total_token_usage; exec --json's turn.completed usage, which after
// `codex exec resume` includes the earlier runs' too): the session's usage
// becomes the total and the change since its last report goes to at's
// day. It reports whether the total grew; a report equal to the last one
// (Codex re-emits them) or below it (an earlier report read after a later
// one, as a resumed run's log read before the first run's) adds nothing.
func (s *session) runningTotal(at time.Time, t streams.Usage) bool {
	if s.cumulative != nil && !grew(t, *s.cumulative) {
		return false
	}
	delta := t
	if s.cumulative != nil {
		delta.Sub(*s.cumulative)
	}
	s.days[s.day(at)].reported.Add(delta)
	s.cumulative = &t
	return true
}

// grew reports whether a running total t is past an earlier one: no field
// smaller, one larger.
func grew(t, before streams.Usage) bool {
	return !t.SameCounts(before) && t.InputTokens >= before.InputTokens && t.OutputTokens >= before.OutputTokens &&
		t.CacheReadTokens >= before.CacheReadTokens && t.CacheWriteTokens >= before.CacheWriteTokens &&
		t.ReasoningTokens >= before.ReasoningTokens
}

// patchEvents turns an apply_patch body into file writes: an added file's
// content is in the patch; an updated file's is not (the patch holds only
// hunks), so it is marked unknown. Deleted files are not writes and record
// nothing.
func patchEvents(patch string) []*streams.Event {
	var evs []*streams.Event
	var cur *streams.Event
	var body []string
	flush := func() {
		if cur != nil && cur.Path != "" {
			if len(body) > 0 {
				cur.Content = strings.Join(body, "\n") + "\n"
			}
			evs = append(evs, cur)
		}
		cur, body = nil, nil
	}
	for line := range strings.SplitSeq(patch, "\n") {
		switch {
		case strings.HasPrefix(line, "*** Add File: "):
			flush()
			cur, body = &streams.Event{Action: "file_write", Path: strings.TrimPrefix(line, "*** Add File: ")}, []string{}
		case strings.HasPrefix(line, "*** Update File: "):
			flush()
			cur = &streams.Event{Action: "file_write", Path: strings.TrimPrefix(line, "*** Update File: "), ContentUnknown: true}
		case strings.HasPrefix(line, "*** "):
			flush()
		case cur != nil && body != nil && strings.HasPrefix(line, "+"):
			body = append(body, line[1:])
		}
	}
	flush()
	return evs
}

// toolOutput is a function call's output: plain text, or Codex's JSON
// {"output": …, "metadata": {"exit_code": …}}.
func toolOutput(raw json.RawMessage) (string, *int) {
	var text string
	if json.Unmarshal(raw, &text) != nil {
		text = string(raw)
	}
	var wrapped struct {
		Output   *string `json:"output"`
		Metadata struct {
			ExitCode *int `json:"exit_code"`
		} `json:"metadata"`
	}
	wraps := strings.HasPrefix(strings.TrimLeft(text, " \t\r\n"), "{") // else no copy of a long text is parsed for nothing
	if wraps && json.Unmarshal([]byte(text), &wrapped) == nil && wrapped.Output != nil {
		if wrapped.Metadata.ExitCode != nil {
			return *wrapped.Output, wrapped.Metadata.ExitCode
		}
		return *wrapped.Output, exitCode(*wrapped.Output)
	}
	return text, exitCode(text)
}
