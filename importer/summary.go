package importer

import (
	"github.com/spinehq/spine/accounting"
	"github.com/spinehq/spine/apps"
	"github.com/spinehq/spine/streams"
)

// Summary is what one import did. It is what `spine import --json` prints.
type Summary struct {
	DryRun bool  `json:"dryRun,omitempty"`
	Files  int   `json:"files"`
	Bytes  int64 `json:"bytes"`
	Lines  int64 `json:"lines"`
	// Sessions were published (new, or resumed after an interrupted import).
	Sessions int `json:"sessions"`
	// AlreadyRecorded sessions had been imported and ended before: nothing
	// of theirs was published again.
	AlreadyRecorded int `json:"alreadyRecorded"`
	// Responses are model responses counted, each once (one record per
	// model response: docs/counting.md); RepeatedResponses were seen again in another
	// session (a resumed session's copy) and not counted twice.
	Responses         int `json:"responses"`
	RepeatedResponses int `json:"repeatedResponses"`
	// Tokens are the published sessions' tokens in the convention of every
	// report (accounting.Tokens: input includes cache reads and writes,
	// total = input + output), so they add up to what `spine cost` says
	// of the same sessions; see docs/counting.md.
	Tokens    accounting.Tokens `json:"tokens"`
	tokens    streams.Usage     // the same in the app's buckets, as summed
	Envelopes int               `json:"envelopes"`
	// Duplicates are envelopes JetStream already held (same id, within its
	// duplicate window): stored once.
	Duplicates int `json:"duplicates"`
	// RepairedLines had bytes that were not UTF-8; they were imported with
	// U+FFFD in their place.
	RepairedLines int `json:"repairedLines"`
	// Skipped lists lines that were not imported and why (at most
	// MaxSkipsListed; SkippedTotal counts them all).
	Skipped      []Skip    `json:"skipped"`
	SkippedTotal int       `json:"skippedTotal"`
	Refused      []Refusal `json:"refused,omitempty"`
	// PerSession lists the sessions, in the order first seen: at most
	// MaxSessionsListed (those ended first) unless Options.AllSessions;
	// OmittedSessions counts the others. The totals above count them all.
	PerSession      []Imported `json:"perSession"`
	OmittedSessions int        `json:"omittedSessions"`
	// PerDay splits Responses and Tokens by UTC day and app (see Day).
	PerDay []Day `json:"perDay"`
}

// MaxSkipsListed bounds Summary.Skipped, so a file of garbage cannot grow it.
const MaxSkipsListed = 1000

// MaxSessionsListed bounds Summary.PerSession unless Options.AllSessions,
// so a summary stays small however many sessions an import holds.
const MaxSessionsListed = 1000

// Skip is one input line that was not imported.
type Skip struct {
	File   string `json:"file"`
	Line   int    `json:"line"`
	Reason string `json:"reason"`
}

// Refusal is an envelope spine refused.
type Refusal struct {
	ID     string `json:"id"`
	Code   string `json:"code"`
	Reason string `json:"reason"`
}

// report is u in the convention of every report (accounting.Normalise).
func report(u streams.Usage) accounting.Tokens { return *accounting.Normalise(&u) }

// Imported is one session of the import.
type Imported struct {
	n            int32             // ordinal, for the order of Summary.PerSession
	SessionID    string            `json:"sessionId"`
	AppSessionID string            `json:"appSessionId"`
	App          string            `json:"app"`
	Format       apps.Format       `json:"format"`
	Files        []string          `json:"files"`
	Status       string            `json:"status"`
	Model        string            `json:"model,omitempty"`
	Responses    int               `json:"responses"`
	Tokens       accounting.Tokens `json:"tokens"` // as Summary.Tokens
	TotalCost    *float64          `json:"totalCost,omitempty"`
	// CostPartial: TotalCost covers fewer of the session's runs than
	// Tokens (a Claude transcript holds a run whose log was not imported).
	CostPartial bool  `json:"costPartial,omitempty"`
	Chunks      int64 `json:"chunks"`
	// Untimed: the output carried no time at all (a stream-json run that
	// called no tool; codex exec --json), so start and end are the first
	// file's modification time.
	Untimed bool `json:"untimed,omitempty"`
	// AlreadyRecorded: spine held this session, ended, before the import.
	AlreadyRecorded bool `json:"alreadyRecorded,omitempty"`
}

func (s *Summary) skip(file string, line int, reason string) {
	s.SkippedTotal++
	if len(s.Skipped) < MaxSkipsListed {
		s.Skipped = append(s.Skipped, Skip{File: file, Line: line, Reason: reason})
	}
}
