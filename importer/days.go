package importer

import (
	"cmp"
	"maps"
	"slices"
	"time"

	"github.com/spinehq/spine/accounting"
)

// Day is one UTC day's share of an import, per app: the responses and
// tokens whose record carries that day's time (a response's line; for a
// session the app totalled itself, the report or running-total change).
type Day struct {
	Date      string            `json:"date"` // YYYY-MM-DD, UTC
	App       string            `json:"app"`
	Responses int               `json:"responses"`
	Tokens    accounting.Tokens `json:"tokens"` // as Summary.Tokens
}

// daySum is one row of Summary.PerDay while it is summed.
type daySum struct {
	responses int
	tokens    Tokens
}

// dayUsage is one session's share of one day: tokens summed over its
// responses, and tokens from the app's own reports (a stream-json result,
// a codex exec turn, a change of a rollout's running total). A session's
// days use the same basis as its total (see session.total).
type dayUsage struct {
	date      int32 // days since 1970-01-01, UTC
	responses int
	tokens    Tokens
	reported  Tokens
}

// dayKey is one row of Summary.PerDay.
type dayKey struct {
	date int32
	app  string
}

// dayOf is the UTC day of a record's time, in days since 1970-01-01.
func dayOf(at time.Time) int32 {
	sec := at.Unix()
	if sec < 0 {
		sec -= 86400 - 1 // round towards the earlier day
	}
	return int32(sec / 86400)
}

// dateOf is a day's YYYY-MM-DD.
func dateOf(day int32) string {
	return time.Unix(int64(day)*86400, 0).UTC().Format(time.DateOnly)
}

// day is the index of the session's share of at's day, added on first use.
func (s *session) day(at time.Time) int32 {
	d := dayOf(at)
	for i := range s.days {
		if s.days[i].date == d {
			return int32(i)
		}
	}
	s.days = append(s.days, dayUsage{date: d})
	return int32(len(s.days) - 1)
}

// addReport adds one of the app's own reports to the session's total and
// to its day.
func (s *session) addReport(at time.Time, t Tokens) {
	if s.report == nil {
		s.report = &Tokens{}
	}
	s.report.add(t)
	s.days[s.day(at)].reported.add(t)
}

// addDays adds a closed session's days to the import's, per date and app.
func (imp *Importer) addDays(s *session) {
	byReport := s.byReport() || s.cumulative != nil
	for _, u := range s.days {
		k := dayKey{u.date, s.app()}
		d := imp.days[k]
		if d == nil {
			d = &daySum{}
			imp.days[k] = d
		}
		d.responses += u.responses
		if byReport {
			d.tokens.add(u.reported)
		} else {
			d.tokens.add(u.tokens)
		}
	}
}

// perDay is Summary.PerDay: the days in date order, then app.
func (imp *Importer) perDay() []Day {
	days := make([]Day, 0, len(imp.days))
	for _, k := range slices.SortedFunc(maps.Keys(imp.days), func(a, b dayKey) int {
		return cmp.Or(cmp.Compare(a.date, b.date), cmp.Compare(a.app, b.app))
	}) {
		if d := imp.days[k]; d.responses != 0 || d.tokens != (Tokens{}) { // a day a snapshot moved away from is left empty
			days = append(days, Day{Date: dateOf(k.date), App: k.app, Responses: d.responses, Tokens: d.tokens.report()})
		}
	}
	return days
}
