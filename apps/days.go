package apps

import (
	"time"

	"github.com/spinehq/spine/streams"
)

// dayUsage is one session's share of one day: tokens summed over its
// responses, and tokens from the app's own reports (a stream-json result,
// a codex exec turn, a change of a rollout's running total). A session's
// days use the same basis as its total (see session.total).
type dayUsage struct {
	date      int32 // days since 1970-01-01, UTC
	responses int
	tokens    streams.Usage
	reported  streams.Usage
}

// dayOf is the UTC day of a record's time, in days since 1970-01-01.
func dayOf(at time.Time) int32 {
	sec := at.Unix()
	if sec < 0 {
		sec -= 86400 - 1 // round towards the earlier day
	}
	return int32(sec / 86400)
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
func (s *session) addReport(at time.Time, t streams.Usage) {
	if s.report == nil {
		s.report = &streams.Usage{}
	}
	s.report.Add(t)
	s.days[s.day(at)].reported.Add(t)
}
