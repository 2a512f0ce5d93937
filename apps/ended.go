package apps

import "github.com/spinehq/spine/streams"

// Ended is what a Translator knows of a session at its end.
type Ended struct {
	Ordinal      int // the order the sessions were first seen in, from 0
	SessionID    string
	AppSessionID string
	App          string
	Format       Format   // the format of its first source
	Files        []string // its sources, in the order read
	Status       string
	Model        string
	Responses    int
	Tokens       streams.Usage // the app's own total when it reported one, else the sum over its responses
	Cost         *float64      // as the app reported it; nil when it did not
	// CostPartial: Cost covers fewer of the session's runs than Tokens (a
	// Claude session whose transcript holds a run no imported log
	// reported; see session.byReport).
	CostPartial bool
	Chunks      int64
	// AlreadyRecorded: spine held this session, ended, before: nothing of
	// it was published.
	AlreadyRecorded bool
	// Untimed: the output carried no time at all, so start and end are the
	// first source's ModTime.
	Untimed bool
	// Days split Responses and Tokens by the UTC day of the records that
	// carried them, on the same basis as Tokens.
	Days []DayUsage
}

// DayUsage is a session's share of one UTC day.
type DayUsage struct {
	Date      int32 // days since 1970-01-01, UTC
	Responses int
	Tokens    streams.Usage
}

// ended is what the session knows at its end.
func (s *session) ended() *Ended {
	e := &Ended{Ordinal: int(s.n), SessionID: s.id, AppSessionID: s.appID, App: s.app(), Format: s.format,
		Files: s.files, Status: cmpOr(s.status, "done"), Model: s.model, Responses: s.responses, Tokens: s.total(),
		Cost: s.cost, CostPartial: s.cost != nil && !s.byReport(), Chunks: s.seq, AlreadyRecorded: s.baseEnded && !s.published,
		Untimed: s.startAt.IsZero()}
	byReport := s.byReport() || s.cumulative != nil
	for _, u := range s.days {
		d := DayUsage{Date: u.date, Responses: u.responses, Tokens: u.tokens}
		if byReport {
			d.Tokens = u.reported
		}
		e.Days = append(e.Days, d)
	}
	return e
}
