package accounting

import (
	"cmp"
	"context"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/spinehq/spine/streams"
)

// GroupBys are the ways a summary can group calls. Times are UTC; a week
// starts on Monday and is named by that day; a machine is the session's
// workerId ("" when its start named none); a session is one call (a
// session has exactly one router call), keyed by its session id.
var GroupBys = []string{"day", "week", "month", "app", "model", "billing", "member", "machine", "plan", "session"}

// groupKeys are the SQL expressions behind GroupBys, over the columns
// summaries aggregate (see summaryRows): day is a UTC date.
var groupKeys = map[string]string{
	"day":     `to_char(day::timestamp, 'YYYY-MM-DD')`,
	"week":    `to_char(date_trunc('week', day::timestamp), 'YYYY-MM-DD')`,
	"month":   `to_char(day::timestamp, 'YYYY-MM')`,
	"app":     `app`,
	"model":   `served_model`,
	"billing": `billing`,
	"member":  `member`,
	"machine": `worker_id`,
	"plan":    `plan_id`,
	"session": `session_id`,
}

// Summary defaults and bounds.
const (
	DefaultSummaryDays = 30
	MaxSummaryRange    = 3660 * 24 * time.Hour // ten years
	MaxSummaryLimit    = 10000                 // rows of a page
	MaxAfterBytes      = 4096                  // an after cursor (a key)
)

// SummaryQuery selects a summary: calls that ended in [From, To), grouped.
type SummaryQuery struct {
	From, To time.Time
	GroupBy  string
	// Limit is the most rows of a page; 0 means every row.
	Limit int
	// After is the key a page starts after (the previous page's Next);
	// nil means from the first key.
	After *string
	// Member limits the summary to one member's calls; empty means every
	// member of the org.
	Member string
}

// ParseSummaryQuery reads from, to, groupBy, limit and after. A time is
// RFC 3339 or a date (YYYY-MM-DD, UTC); a date as "to" includes that whole
// day. Defaults: to = now, from = 30 days before to, groupBy = day, every
// row (limit is 1 to MaxSummaryLimit when given), from the first key.
func ParseSummaryQuery(v url.Values, now time.Time) (SummaryQuery, error) {
	q := SummaryQuery{GroupBy: cmp.Or(v.Get("groupBy"), "day")}
	if !slices.Contains(GroupBys, q.GroupBy) {
		return q, fmt.Errorf("%w: groupBy %q is not one of %v", ErrBadQuery, q.GroupBy, GroupBys)
	}
	if err := q.parsePage(v); err != nil {
		return q, err
	}
	var err error
	if q.To, err = parseTime("to", v.Get("to"), now, true); err != nil {
		return q, err
	}
	if q.From, err = parseTime("from", v.Get("from"), q.To.AddDate(0, 0, -DefaultSummaryDays), false); err != nil {
		return q, err
	}
	if !q.From.Before(q.To) {
		return q, fmt.Errorf("%w: from (%s) must be before to (%s)", ErrBadQuery, q.From.Format(time.RFC3339), q.To.Format(time.RFC3339))
	}
	if q.To.Sub(q.From) > MaxSummaryRange {
		return q, fmt.Errorf("%w: from and to are more than ten years apart", ErrBadQuery)
	}
	return q, nil
}

// parsePage reads limit and after. An empty after is a key like any other
// (the empty plan or model sorts first), so it is "after" being present
// that starts a page after a key.
func (q *SummaryQuery) parsePage(v url.Values) error {
	if v.Has("limit") {
		n, err := strconv.Atoi(v.Get("limit"))
		if err != nil || n < 1 || n > MaxSummaryLimit {
			return fmt.Errorf("%w: limit %q must be a whole number from 1 to %d", ErrBadQuery, v.Get("limit"), MaxSummaryLimit)
		}
		q.Limit = n
	}
	if v.Has("after") {
		a := v.Get("after")
		if len(a) > MaxAfterBytes || !utf8.ValidString(a) || strings.ContainsRune(a, 0) {
			return fmt.Errorf("%w: after must be a key of a previous page (its next): UTF-8 text of at most %d bytes",
				ErrBadQuery, MaxAfterBytes)
		}
		q.After = &a
	}
	return nil
}

func parseTime(name, s string, def time.Time, endOfDay bool) (time.Time, error) {
	if s == "" {
		return def.UTC(), nil
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t.UTC(), nil
	}
	d, err := time.Parse(time.DateOnly, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("%w: %s %q is neither RFC 3339 (2026-11-01T09:00:00Z) nor a date (2026-11-01)", ErrBadQuery, name, s)
	}
	if endOfDay {
		d = d.AddDate(0, 0, 1)
	}
	return d, nil
}

// Summary is a cost report: one row per group, in key order, plus the
// total of the whole window (of every page).
type Summary struct {
	Org string `json:"org"`
	// Member is the one member whose calls the summary counts; absent when
	// it counts the whole org's.
	Member  string    `json:"member,omitempty"`
	From    time.Time `json:"from"`
	To      time.Time `json:"to"`
	GroupBy string    `json:"groupBy"`
	Rows    []Row     `json:"rows"`
	Total   Row       `json:"total"`
	// Next is the last key of a page that more rows follow: the next
	// page's after. Absent on the last page.
	Next *string `json:"next,omitempty"`
}

// Summarize reports the org's router calls (one member's, with sq.Member).
func Summarize(ctx context.Context, q streams.Querier, org string, sq SummaryQuery) (*Summary, error) {
	key, ok := groupKeys[sq.GroupBy]
	if !ok {
		return nil, fmt.Errorf("%w: groupBy %q", ErrBadQuery, sq.GroupBy)
	}
	if sq.Limit < 0 || sq.Limit > MaxSummaryLimit {
		return nil, fmt.Errorf("%w: limit %d", ErrBadQuery, sq.Limit)
	}
	s := &Summary{Org: org, Member: sq.Member, From: sq.From, To: sq.To, GroupBy: sq.GroupBy}
	var err error
	if sq.GroupBy == "session" { // a row per call: router_calls' own rows
		if _, s.Total, err = summaryRows(ctx, q, "", org, sq); err == nil {
			expect := s.Total.Metered.Calls + s.Total.Subscription.Calls + s.Total.Unknown.Calls // the window's sessions
			s.Rows, err = sessionRows(ctx, q, org, sq, int(min(expect, 1<<20)))
		}
	} else {
		s.Rows, s.Total, err = summaryRows(ctx, q, key, org, sq)
	}
	if err != nil {
		return nil, err
	}
	if sq.Limit > 0 && len(s.Rows) > sq.Limit { // the queries read one row more than a page
		s.Rows = s.Rows[:sq.Limit]
		s.Next = &s.Rows[sq.Limit-1].Key
	}
	if s.Rows == nil {
		s.Rows = []Row{}
	}
	return s, nil
}
