package accounting

import (
	"fmt"
	"math/big"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// TableRow is one row of the cost page's table: a group's cells, one per
// billing class, in BillingClasses order.
type TableRow struct {
	Row     Row
	Label   string
	GroupBy string // "total" for the total row
	Cells   []ClassCell
}

// ClassCell is one billing class's cell of a TableRow.
type ClassCell struct {
	Billing string
	Cell    Cell
}

func tableRow(r Row, groupBy string, classes []string) TableRow {
	t := TableRow{Row: r, Label: GroupLabel(r.Key, groupBy), GroupBy: groupBy}
	if groupBy == "total" {
		t.Label = "total"
	}
	for _, c := range classes {
		t.Cells = append(t.Cells, ClassCell{Billing: c, Cell: *r.Cell(c)})
	}
	return t
}

// Measures the cost page can chart.
var Measures = []string{"tokens", "calls", "dollars"}

// Page is what the cost page shows: a summary, charted by one measure.
type Page struct {
	Summary *Summary
	Measure string // tokens, calls or dollars
}

// chart geometry, in SVG user units.
const (
	chartW, chartH = 760.0, 260.0
	plotTop        = 20.0
	plotBottom     = 200.0
	plotLeft       = 70.0
	plotRight      = 750.0
)

// Bar is one group's stacked bar on the cost chart.
type Bar struct {
	X, W, LabelX float64
	Label        string
	Segments     []Segment
}

// Segment is one billing class's part of a Bar.
type Segment struct {
	Y, H    float64
	Billing string
	Title   string
}

// PageData is everything the cost page shows, laid out: the chart's bars
// in SVG user units, the table's rows, the form's values. The server
// renders it (server/pages).
type PageData struct {
	S                           *Summary // the summary shown
	Measure                     string
	Measures, GroupBys, Classes []string
	Bars                        []Bar  // nil: nothing to chart (Note says why)
	Top                         string // the chart's top value, formatted in Measure
	Note                        string // what the chart leaves out, or why it is empty
	W, H, PlotTop, PlotBottom   float64
	PlotLeft, PlotRight         float64
	From, To                    string // the range's first and last day (UTC)
	Query                       string // the summary's query string, for links
	Rows                        []TableRow
	Total                       TableRow
}

// Data lays the page out.
func (p Page) Data() PageData {
	bars, top := chart(p)
	q := url.Values{"from": {p.Summary.From.Format(time.RFC3339)}, "to": {p.Summary.To.Format(time.RFC3339)},
		"groupBy": {p.Summary.GroupBy}}
	d := PageData{
		S: p.Summary, Measure: p.Measure, Measures: Measures, GroupBys: GroupBys,
		Classes: BillingClasses, Bars: bars, Top: formatMeasure(p.Measure, top), Note: chartNote(p, bars == nil),
		W: chartW, H: chartH, PlotTop: plotTop, PlotBottom: plotBottom, PlotLeft: plotLeft, PlotRight: plotRight,
		From: p.Summary.From.Format(time.DateOnly), To: p.Summary.To.Add(-time.Nanosecond).Format(time.DateOnly),
		Query: q.Encode(), Total: tableRow(p.Summary.Total, "total", BillingClasses),
	}
	for _, r := range p.Summary.Rows {
		d.Rows = append(d.Rows, tableRow(r, p.Summary.GroupBy, BillingClasses))
	}
	return d
}

// measure is a cell's value in the charted measure; dollars that nobody
// reported count as 0 on the chart only, and the table says so.
func measure(c Cell, m string) float64 {
	switch m {
	case "calls":
		return float64(c.Calls)
	case "dollars":
		if c.Dollars == nil {
			return 0
		}
		f, _ := strconv.ParseFloat(c.Dollars.String(), 64)
		return f
	}
	return float64(c.Tokens.Total)
}

// chartNote says what the chart leaves out: why it is empty (no calls, or
// calls that reported nothing for the measure), or how many calls it omits
// because they reported nothing.
func chartNote(p Page, empty bool) string {
	var calls, reported int64
	for _, b := range BillingClasses {
		c := p.Summary.Total.Cell(b)
		calls += c.Calls
		switch p.Measure {
		case "dollars":
			reported += c.CallsWithCost
		case "tokens":
			reported += c.CallsWithUsage
		default:
			reported += c.Calls
		}
	}
	what := p.Measure
	if what == "tokens" {
		what = "usage (tokens)"
	}
	switch {
	case calls == 0:
		return "No calls in this range."
	case reported == 0:
		return fmt.Sprintf("%s %s, none reported %s.", FormatInt(calls), plural(calls, "call"), what)
	case empty:
		return fmt.Sprintf("%s %s; the %s that reported %s reported %s.", FormatInt(calls), plural(calls, "call"),
			FormatInt(reported), what, formatMeasure(p.Measure, 0))
	case reported < calls:
		return fmt.Sprintf("%s of %s calls reported %s; the other %s %s not in the chart.", FormatInt(reported),
			FormatInt(calls), what, FormatInt(calls-reported), plural(calls-reported, "is", "are"))
	}
	return ""
}

// plural is one for n == 1, else many (default: one + "s").
func plural(n int64, one string, many ...string) string {
	switch {
	case n == 1:
		return one
	case len(many) > 0:
		return many[0]
	}
	return one + "s"
}

func chart(p Page) ([]Bar, float64) {
	rows := p.Summary.Rows
	top := 0.0
	for _, r := range rows {
		sum := 0.0
		for _, b := range BillingClasses {
			sum += measure(*r.Cell(b), p.Measure)
		}
		top = max(top, sum)
	}
	if len(rows) == 0 || top == 0 {
		return nil, top
	}
	slot := (plotRight - plotLeft) / float64(len(rows))
	scale := (plotBottom - plotTop) / top
	bars := make([]Bar, len(rows))
	for i, r := range rows {
		x := plotLeft + float64(i)*slot
		b := Bar{X: x + slot*0.15, W: slot * 0.7, LabelX: x + slot/2, Label: GroupLabel(r.Key, p.Summary.GroupBy)}
		y := plotBottom
		for _, class := range BillingClasses {
			v := measure(*r.Cell(class), p.Measure)
			if v == 0 {
				continue
			}
			h := v * scale
			y -= h
			b.Segments = append(b.Segments, Segment{Y: y, H: h, Billing: class,
				Title: fmt.Sprintf("%s %s: %s %s", b.Label, class, formatMeasure(p.Measure, v), p.Measure)})
		}
		bars[i] = b
	}
	return bars, top
}

// GroupLabel names a report group for people; an empty key is a value
// nobody reported (no plan, no model).
func GroupLabel(key, groupBy string) string {
	if key != "" {
		return key
	}
	switch groupBy {
	case "plan":
		return "(no plan)"
	case "model":
		return "(not reported)"
	}
	return "(none)"
}

func formatMeasure(m string, v float64) string {
	if m == "dollars" {
		return "$" + strconv.FormatFloat(v, 'f', 2, 64)
	}
	return FormatInt(int64(v))
}

// FormatInt writes n with thousands separators: 1,234,567.
func FormatInt(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// FormatCost writes one call's reported cost (a router-call row's
// totalCost) as FormatDollars writes a sum: $0.50, $0.24722425. Every page
// and command that shows a call's cost writes it so.
func FormatCost(usd float64) string {
	return FormatDollars(decimal(strconv.FormatFloat(usd, 'f', -1, 64)))
}

// decimal is a number's exact text, for FormatDollars.
type decimal string

func (d decimal) String() string { return string(d) }

// FormatDollars writes a reported sum exactly, with at least cents.
func FormatDollars(d fmt.Stringer) string {
	r, ok := new(big.Rat).SetString(d.String())
	if !ok {
		return "$" + d.String()
	}
	s := d.String()
	decimals := 2
	if i := strings.IndexByte(s, '.'); i >= 0 {
		decimals = max(decimals, len(s)-i-1)
	}
	return "$" + r.FloatString(decimals)
}
