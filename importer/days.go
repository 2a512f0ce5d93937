package importer

import (
	"cmp"
	"maps"
	"slices"
	"time"

	"github.com/spinehq/spine/accounting"
	"github.com/spinehq/spine/apps"
	"github.com/spinehq/spine/streams"
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
	tokens    streams.Usage
}

// dayKey is one row of Summary.PerDay.
type dayKey struct {
	date int32
	app  string
}

// dateOf is a day's YYYY-MM-DD.
func dateOf(day int32) string {
	return time.Unix(int64(day)*86400, 0).UTC().Format(time.DateOnly)
}

// addDays adds a closed session's days to the import's, per date and app.
func (imp *Importer) addDays(e *apps.Ended) {
	for _, u := range e.Days {
		k := dayKey{u.Date, e.App}
		d := imp.days[k]
		if d == nil {
			d = &daySum{}
			imp.days[k] = d
		}
		d.responses += u.Responses
		d.tokens.Add(u.Tokens)
	}
}

// perDay is Summary.PerDay: the days in date order, then app.
func (imp *Importer) perDay() []Day {
	days := make([]Day, 0, len(imp.days))
	for _, k := range slices.SortedFunc(maps.Keys(imp.days), func(a, b dayKey) int {
		return cmp.Or(cmp.Compare(a.date, b.date), cmp.Compare(a.app, b.app))
	}) {
		// A day a snapshot moved away from is left empty.
		if d := imp.days[k]; d.responses != 0 || !d.tokens.SameCounts(streams.Usage{}) {
			days = append(days, Day{Date: dateOf(k.date), App: k.app, Responses: d.responses, Tokens: report(d.tokens)})
		}
	}
	return days
}
