package node_test

import (
	"cmp"
	"context"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/spinehq/spine/accounting"
)

// EnvBrowser turns on tests that drive Debian's headless Chromium
// (make cost-page-check installs it).
const EnvBrowser = "SPINE_BROWSER_TESTS"

// EnvScreenshots is where browser tests leave their screenshots (default:
// the system temp directory).
const EnvScreenshots = "SPINE_SCREENSHOT_DIR"

// TestCostPageInChromium opens /ui/cost in headless Chromium, takes a
// screenshot, and checks every number the page shows against the summary
// API's JSON for the same range.
func TestCostPageInChromium(t *testing.T) {
	browser, err := exec.LookPath("chromium")
	if err != nil {
		if os.Getenv(EnvBrowser) != "" {
			t.Fatal("chromium is not installed: make cost-page-check installs it (apt-get install chromium)")
		}
		t.Skip("chromium is not installed: make cost-page-check installs it (apt-get install chromium)")
	}
	f := newCostFixture(t)
	f.publishFile("../testdata/accounting/mixed.jsonl")
	alice := f.token("acme", "alice")
	const query = "from=2026-11-01&to=2026-11-30&groupBy=day"
	page := f.base + "/ui/cost?" + query + "&token=" + alice

	shot := filepath.Join(cmp.Or(os.Getenv(EnvScreenshots), os.TempDir()), "spine-cost-page.png")
	headless(t, browser, "--window-size=1100,1000", "--screenshot="+shot, page)
	if info, err := os.Stat(shot); err != nil || info.Size() < 1000 {
		t.Fatalf("screenshot %s: %v", shot, err)
	}
	t.Logf("screenshot: %s", shot)
	dom := headless(t, browser, "--dump-dom", page)

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

func headless(t *testing.T, browser string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	base := []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
		"--user-data-dir=" + t.TempDir(), "--hide-scrollbars"}
	out, err := exec.CommandContext(ctx, browser, append(base, args...)...).Output()
	if err != nil {
		t.Fatalf("chromium %v: %v", args, err)
	}
	return string(out)
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
