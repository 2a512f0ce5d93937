package node_test

import (
	"math/big"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/spinehq/spine/accounting"
	"github.com/spinehq/spine/internal/chromium"
)

// TestCostPageInChromium opens /ui/cost in headless Chromium, keeps a
// screenshot, checks every number the page shows against the summary
// API's JSON for the same range, and runs every check of internal/chromium
// (keyboard, screen reader, phone).
func TestCostPageInChromium(t *testing.T) {
	b := chromium.Start(t)
	f := newCostFixture(t)
	f.publishFile("../testdata/accounting/mixed.jsonl")
	alice := f.token("acme", "alice")
	const query = "from=2026-11-01&to=2026-11-30&groupBy=day"
	tab := b.Open(t, f.base+"/ui/cost?"+query+"&token="+alice)
	tab.Await(t, `document.querySelector('#summary tfoot tr')`)
	tab.Screenshot(t, "ui-cost")
	dom := tab.Eval(t, `document.documentElement.outerHTML`)
	tab.Audit(t)

	_, body := f.do("GET", "/v1/cost/summary?"+query, alice, nil)
	s := decode[accounting.Summary](t, body)
	shown := tableCells(t, dom)
	rows := append(s.Rows, s.Total)
	if len(shown) != len(rows) {
		t.Fatalf("page shows %d rows, the API has %d", len(shown), len(rows))
	}
	for i, r := range rows {
		for _, b := range accounting.BillingClasses {
			c := r.Cell(b)
			for field, want := range map[string]string{"calls": strconv.FormatInt(c.Calls, 10),
				"tokens": tokensText(c), "dollars": dollarsText(c)} {
				if got := shown[i][b+"."+field]; got != want {
					t.Errorf("row %s %s %s: page shows %q, API says %q", r.Key, b, field, got, want)
				}
			}
		}
	}
}

var (
	rowRE  = regexp.MustCompile(`(?s)<tr[^>]*data-key="[^"]*"[^>]*>(.*?)</tr>`)
	tdRE   = regexp.MustCompile(`(?s)<td data-billing="(\w+)" data-field="(\w+)">(.*?)</td>`)
	tagRE  = regexp.MustCompile(`<[^>]+>`)
	spaces = regexp.MustCompile(`\s+`)
)

// tableCells reads the summary table: per row, "billing.field" → its text.
func tableCells(t *testing.T, dom string) []map[string]string {
	t.Helper()
	var out []map[string]string
	for _, row := range rowRE.FindAllStringSubmatch(dom, -1) {
		cells := map[string]string{}
		for _, td := range tdRE.FindAllStringSubmatch(row[1], -1) {
			text := strings.TrimSpace(spaces.ReplaceAllString(tagRE.ReplaceAllString(td[3], ""), " "))
			cells[td[1]+"."+td[2]] = strings.ReplaceAll(text, ",", "")
		}
		out = append(out, cells)
	}
	if len(out) == 0 {
		t.Fatalf("no summary table in the page:\n%s", dom)
	}
	return out
}

func partial(n, of int64) string {
	if n > 0 && n < of {
		return " " + strconv.FormatInt(n, 10) + " of " + strconv.FormatInt(of, 10)
	}
	return ""
}

func tokensText(c *accounting.Cell) string {
	switch {
	case c.CallsWithUsage > 0:
		return strconv.FormatInt(c.Tokens.Total, 10) + partial(c.CallsWithUsage, c.Calls)
	case c.Calls > 0:
		return "not reported"
	}
	return "0"
}

func dollarsText(c *accounting.Cell) string {
	switch {
	case c.Dollars != nil:
		r, _ := new(big.Rat).SetString(c.Dollars.String())
		decimals := 2
		if i := strings.IndexByte(c.Dollars.String(), '.'); i >= 0 {
			decimals = max(decimals, len(c.Dollars.String())-i-1)
		}
		return "$" + r.FloatString(decimals) + partial(c.CallsWithCost, c.Calls)
	case c.Calls > 0:
		return "not reported"
	}
	return "—"
}
