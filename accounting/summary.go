package accounting

import (
	"cmp"
	"context"
	"fmt"
	"net/url"
	"slices"
	"time"
)

// GroupBys are the ways a summary can group calls. Times are UTC; a week
// starts on Monday and is named by that day; a session is one call (a
// session has exactly one router call), keyed by its session id.
var GroupBys = []string{"day", "week", "month", "app", "model", "billing", "member", "plan", "session"}

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
	"plan":    `plan_id`,
	"session": `session_id`,
}

// Summary defaults and bounds.
const (
	DefaultSummaryDays = 30
	MaxSummaryRange    = 3660 * 24 * time.Hour // ten years
)

// SummaryQuery selects a summary: calls that ended in [From, To), grouped.
type SummaryQuery struct {
	From, To time.Time
	GroupBy  string
}

// ParseSummaryQuery reads from, to and groupBy. A time is RFC 3339 or a
// date (YYYY-MM-DD, UTC); a date as "to" includes that whole day. Defaults:
// to = now, from = 30 days before to, groupBy = day.
func ParseSummaryQuery(v url.Values, now time.Time) (SummaryQuery, error) {
	q := SummaryQuery{GroupBy: cmp.Or(v.Get("groupBy"), "day")}
	if !slices.Contains(GroupBys, q.GroupBy) {
		return q, fmt.Errorf("%w: groupBy %q is not one of %v", ErrBadQuery, q.GroupBy, GroupBys)
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

// Summary is a cost report: one row per group, plus the total.
type Summary struct {
	Org     string    `json:"org"`
	From    time.Time `json:"from"`
	To      time.Time `json:"to"`
	GroupBy string    `json:"groupBy"`
	Rows    []Row     `json:"rows"`
	Total   Row       `json:"total"`
}

// Summarize reports the org's router calls.
func Summarize(ctx context.Context, q Querier, org string, sq SummaryQuery) (*Summary, error) {
	key, ok := groupKeys[sq.GroupBy]
	if !ok {
		return nil, fmt.Errorf("%w: groupBy %q", ErrBadQuery, sq.GroupBy)
	}
	var rows []Row
	var total Row
	var err error
	if sq.GroupBy == "session" { // a row per call: router_calls' own rows
		if rows, err = aggregate(ctx, q, key, `at >= $2 AND at < $3`, org, sq.From, sq.To); err == nil {
			_, total, err = summaryRows(ctx, q, "", org, sq.From, sq.To)
		}
	} else {
		rows, total, err = summaryRows(ctx, q, key, org, sq.From, sq.To)
	}
	if err != nil {
		return nil, err
	}
	if rows == nil {
		rows = []Row{}
	}
	return &Summary{Org: org, From: sq.From, To: sq.To, GroupBy: sq.GroupBy, Rows: rows, Total: total}, nil
}
