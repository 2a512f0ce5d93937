package pages

import (
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/spinehq/spine/accounting"
)

// One way to say each thing on every page: the templates say a time,
// a duration, a session's status and a reported cost through these
// (the funcs "when", "duration", "status" and "cost"), never each its own.

func when(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05 UTC") }

// Duration is how long a session ran from start to end in its two largest
// units (45 s, 1 min 40 s, 2 h 05 min, 3 d 4 h), "running" while it runs
// (end nil).
func Duration(start time.Time, end *time.Time) string {
	if end == nil {
		return "running"
	}
	d := end.Sub(start)
	s := int64(d.Round(time.Second) / time.Second)
	switch {
	case d < time.Second:
		return "under 1 s"
	case s < 60:
		return fmt.Sprintf("%d s", s)
	case s < 3600:
		return fmt.Sprintf("%d min %02d s", s/60, s%60)
	case s < 86400:
		return fmt.Sprintf("%d h %02d min", s/3600, s%3600/60)
	}
	return fmt.Sprintf("%d d %d h", s/86400, s%86400/3600)
}

// statusWords say each session status in words where its name alone does not.
var statusWords = map[string]string{"timeout": "timed out"}

// Status is a session's (or its router call's) status in words: running,
// done, failed, cancelled, disconnected, timed out.
func Status(status string) string {
	if w, ok := statusWords[status]; ok {
		return w
	}
	return status
}

// reportedCost is a call's cost as the app reported it, written as every
// sum of dollars is (accounting.FormatCost), "" when it reported none
// (never $0 for "not reported").
func reportedCost(c *accounting.Call) string {
	if c == nil || c.TotalCost == nil {
		return ""
	}
	return accounting.FormatCost(*c.TotalCost)
}

// Cut is text cut to at most limit bytes at a character boundary, never
// in the middle of one: what a page shows of a long output or message
// (the API has the whole).
func Cut(text string, limit int) string {
	if len(text) <= limit {
		return text
	}
	n := limit
	for n > 0 && !utf8.RuneStart(text[n]) {
		n--
	}
	return text[:n]
}
