package importer

import (
	"cmp"
	"maps"
	"slices"
	"time"
)

// Day is one UTC day's share of an import, per app: the responses and
// tokens whose record carries that day's time (a response's line; for a
// session the app totalled itself, the report or running-total change).
type Day struct {
	Date      string `json:"date"` // YYYY-MM-DD, UTC
	App       string `json:"app"`
	Responses int    `json:"responses"`
	Tokens    Tokens `json:"tokens"`
}

// dayUsage is one session's share of one day: tokens summed over its
// responses, and tokens from the app's own reports (a stream-json result,
// a codex exec turn, a change of a rollout's running total). A session's
// days use the same basis as its total (see session.total).
type dayUsage struct {
	responses int
	tokens    Tokens
	reported  Tokens
}

// dayOf is the UTC date of a record's time.
func dayOf(at time.Time) string { return at.UTC().Format(time.DateOnly) }

func (s *session) day(at time.Time) *dayUsage {
	d := dayOf(at)
	if s.days == nil {
		s.days = map[string]*dayUsage{}
	}
	u := s.days[d]
	if u == nil {
		u = &dayUsage{}
		s.days[d] = u
	}
	return u
}

// addReport adds one of the app's own reports to the session's total and
// to its day.
func (s *session) addReport(at time.Time, t Tokens) {
	if s.report == nil {
		s.report = &Tokens{}
	}
	s.report.add(t)
	s.day(at).reported.add(t)
}

// perDay sums the sessions' days, per date and app, in date order.
func perDay(sessions []*session) []Day {
	type key struct{ date, app string }
	sums := map[key]*Day{}
	for _, s := range sessions {
		byReport := s.report != nil || s.cumulative != nil
		for date, u := range s.days {
			k := key{date, s.app}
			d := sums[k]
			if d == nil {
				d = &Day{Date: date, App: s.app}
				sums[k] = d
			}
			d.Responses += u.responses
			if byReport {
				d.Tokens.add(u.reported)
			} else {
				d.Tokens.add(u.tokens)
			}
		}
	}
	days := make([]Day, 0, len(sums))
	for _, k := range slices.SortedFunc(maps.Keys(sums), func(a, b key) int {
		return cmp.Or(cmp.Compare(a.date, b.date), cmp.Compare(a.app, b.app))
	}) {
		if d := sums[k]; d.Responses != 0 || d.Tokens != (Tokens{}) {
			days = append(days, *d) // a day a snapshot moved away from is left empty
		}
	}
	return days
}
