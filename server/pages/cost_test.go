package pages_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/spinehq/spine/accounting"
	"github.com/spinehq/spine/server/pages"
)

func page(t *testing.T, measure string, rows ...accounting.Row) string {
	t.Helper()
	s := &accounting.Summary{Org: "acme", From: time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC),
		To: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC), GroupBy: "day", Rows: rows, Total: accounting.Row{Key: "total"}}
	for _, r := range rows { // one row per test: the total is that row
		s.Total.Metered, s.Total.Subscription, s.Total.Unknown = r.Metered, r.Subscription, r.Unknown
	}
	var b strings.Builder
	if err := pages.Render(&b, "cost", pages.View{Data: accounting.Page{Summary: s, Measure: measure}.Data()}); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// The chart says why it is empty or what it leaves out: calls that reported
// nothing for the measure are not "no calls".
func TestCostPageChartNote(t *testing.T) {
	zero := json.Number("0")
	unpriced := accounting.Row{Key: "2026-11-02",
		Metered: accounting.Cell{Calls: 2, CallsWithUsage: 2, Tokens: accounting.Tokens{Input: 10, Output: 5, Total: 15}},
		Unknown: accounting.Cell{Calls: 1}}
	freeOnly := accounting.Row{Key: "2026-11-03", Subscription: accounting.Cell{Calls: 3, CallsWithCost: 2, Dollars: &zero}}
	for _, c := range []struct {
		measure string
		rows    []accounting.Row
		want    string
	}{
		{"dollars", nil, `<text id="chart-empty" x="70" y="110" dx="20" font-size="13" class="silent">No calls in this range.</text>`},
		{"dollars", []accounting.Row{unpriced}, `class="silent">3 calls, none reported dollars.</text>`},
		{"tokens", []accounting.Row{freeOnly}, `class="silent">3 calls, none reported usage (tokens).</text>`},
		{"dollars", []accounting.Row{freeOnly}, `class="silent">3 calls; the 2 that reported dollars reported $0.00.</text>`},
		{"tokens", []accounting.Row{unpriced}, `<p id="chart-note" class="silent">2 of 3 calls reported usage (tokens); the other 1 is not in the chart.</p>`},
	} {
		html := page(t, c.measure, c.rows...)
		if !strings.Contains(html, c.want) {
			t.Errorf("%s of %v: page lacks %s", c.measure, c.rows, c.want)
		}
		if len(c.rows) > 0 && strings.Contains(html, "No calls in this range") {
			t.Errorf("%s of %v: says there are no calls", c.measure, c.rows)
		}
	}
	if html := page(t, "calls", unpriced); strings.Contains(html, "chart-note") || strings.Contains(html, "chart-empty") {
		t.Error("a chart of calls leaves nothing out, yet has a note")
	}
}
