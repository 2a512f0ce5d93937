package apps

import (
	"slices"
	"time"

	"github.com/spinehq/spine/streams"
)

// claudeRuns are the processes a Claude session's stream-json results
// reported, in the order read. A result's usage is its query's, the main
// thread's alone (a Task subagent's responses are not in it); its
// modelUsage and total_cost_usd are the process's running totals, every
// model and thread and side request included. So a session's report is,
// per process, its last modelUsage, and its cost each process's last
// total_cost_usd, summed over the processes (`claude -p --resume` is a
// new process each time). A process writes its own output, so a result
// continues the previous one's process only when it is in the same file
// and its modelUsage holds the previous one's plus its own query's usage
// (two runs' outputs appended to one file: a new process starts again
// from its own query). system/init says nothing here: a process writes
// one per query, not one per process. A result without modelUsage
// (before 2.1) adds its usage, and continues the process of an earlier
// result of the same file.
type claudeRuns struct {
	procs []claudeProc
	// signalled and mixed: a system/init gave a billing signal, and two
	// gave different ones (then the session's is unknown).
	signalled, mixed bool
	// responses counts the assistant lines since the last result; text
	// says one had text.
	responses int
	text      bool
}

// shown notes an assistant line of the output.
func (r *claudeRuns) shown(m *claudeMessage) {
	r.responses++
	for _, b := range blocks(m.Content) {
		r.text = r.text || b.Type == "text" && b.Text != ""
	}
}

// claudeProc is one process's running totals, as its last result
// reported them; cost is nil while none reported one.
type claudeProc struct {
	tokens streams.Usage
	cost   *float64
}

// claudeRuns is the session's, made on first use.
func (s *session) claudeRuns() *claudeRuns {
	if s.claude == nil {
		s.claude = &claudeRuns{}
	}
	return s.claude
}

// report adds what one result line reports to the session's report and
// cost; sameFile says an earlier result of the session was in its file.
func (r *claudeRuns) report(s *session, at time.Time, l *claudeStreamLine, sameFile bool) {
	total, ok := l.modelUsageTokens()
	var last *claudeProc
	if n := len(r.procs); n > 0 {
		last = &r.procs[n-1]
	}
	switch {
	case ok && last != nil && sameFile && continues(last.tokens, total, l.Usage.tokens()):
		delta := total
		delta.Sub(last.tokens)
		last.tokens = total
		s.addReport(at, delta)
	case ok:
		r.procs = append(r.procs, claudeProc{tokens: total})
		s.addReport(at, total)
	default:
		if last == nil || !sameFile {
			r.procs = append(r.procs, claudeProc{})
		}
		if l.Usage != nil {
			s.addReport(at, l.Usage.tokens())
		}
	}
	if c := l.TotalCostUSD; c != nil && *c >= 0 {
		r.procs[len(r.procs)-1].cost = new(*c)
	}
	s.cost = r.cost()
}

// cost is the sum of the processes' costs, nil when none reported one;
// summed smallest first, so the sum is the same whatever order the
// processes were read in.
func (r *claudeRuns) cost() *float64 {
	var costs []float64
	for _, p := range r.procs {
		if p.cost != nil {
			costs = append(costs, *p.cost)
		}
	}
	if len(costs) == 0 {
		return nil
	}
	slices.Sort(costs)
	var sum float64
	for _, c := range costs {
		sum += c
	}
	return &sum
}

// continues reports whether a running total is a later one of the process
// whose last total was prev: it holds prev and its own query's usage.
func continues(prev, total, query streams.Usage) bool {
	return total.InputTokens >= prev.InputTokens+query.InputTokens &&
		total.OutputTokens >= prev.OutputTokens+query.OutputTokens &&
		total.CacheReadTokens >= prev.CacheReadTokens+query.CacheReadTokens &&
		total.CacheWriteTokens >= prev.CacheWriteTokens+query.CacheWriteTokens
}

// claudeKeySources are the apiKeySource values of Claude Code 2.1's
// system/init that name an API key, billed per token. A claude.ai login
// (its OAuth token, measured) and a run with no credential both say
// "none": that says nothing about billing.
var claudeKeySources = []string{"ANTHROPIC_API_KEY", "apiKeyHelper", "/login managed key"}

// claudeBilling maps an apiKeySource to a billing signal ("" = silent).
func claudeBilling(apiKeySource string) string {
	if slices.Contains(claudeKeySources, apiKeySource) {
		return "metered"
	}
	return ""
}

// signal notes one system/init's billing signal: the session's is that
// signal while every init gives the same one, else unknown.
func (r *claudeRuns) signal(s *session, billing string) {
	r.mixed = r.mixed || r.signalled && billing != s.billing
	r.signalled, s.billing = true, billing
	if r.mixed {
		s.billing = ""
	}
}
