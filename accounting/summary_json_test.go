package accounting_test

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/spinehq/spine/accounting"
)

// encoded is what writing s with a json.Encoder gives, as the server did.
func encoded(t testing.TB, s *accounting.Summary) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := json.NewEncoder(&buf).Encode(s); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func checkAppendJSON(t testing.TB, s *accounting.Summary) {
	t.Helper()
	got, err := s.AppendJSON(nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := encoded(t, s); !bytes.Equal(got, want) {
		t.Fatalf("AppendJSON:\n%s\njson.Encoder:\n%s", got, want)
	}
}

// Keys, orgs and groupBys that need escaping, in every position.
var awkward = []string{"", "acme", "s-1_x", `q"uote`, `back\slash`, "<b>&amp;</b>", "tab\tnew\nline\x00",
	"\x7f", "é日本", "\u2028\u2029", "bad\xffutf8", "\U0001F600"}

// AppendJSON writes what encoding/json writes, for any strings, counts,
// dollars, times and pages.
func TestAppendJSONMatchesEncodingJSON(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	str := func() string { return awkward[r.IntN(len(awkward))] }
	dollars := []string{"0", "0.25", "1.00", "12345678901234567890.0000001"}
	cell := func() accounting.Cell {
		n := func() int64 { return []int64{0, 1, math.MaxInt64, r.Int64N(1e12)}[r.IntN(4)] }
		c := accounting.Cell{Calls: n(), CallsWithUsage: n(), CallsWithCost: n(),
			Tokens: accounting.Tokens{Input: n(), Output: n(), CacheRead: n(), CacheWrite: n(), Reasoning: n(), Total: n()}}
		if r.IntN(2) == 0 {
			d := json.Number(dollars[r.IntN(len(dollars))])
			c.Dollars = &d
		}
		return c
	}
	row := func() accounting.Row {
		return accounting.Row{Key: str(), Metered: cell(), Subscription: cell(), Unknown: cell()}
	}
	for range 500 {
		s := &accounting.Summary{Org: str(), GroupBy: str(), Total: row(), Rows: []accounting.Row{},
			From: time.Date(2026, 11, 1, 0, 0, 0, r.IntN(2)*123456789, time.UTC),
			To:   time.Date(2026, 12, 1, 9, 30, r.IntN(60), 0, time.FixedZone("x", 3600*r.IntN(3)))}
		for range r.IntN(4) {
			s.Rows = append(s.Rows, row())
		}
		if r.IntN(2) == 0 {
			next := str()
			s.Next = &next
		}
		if r.IntN(2) == 0 {
			s.Member = str()
		}
		checkAppendJSON(t, s)
	}
}

func FuzzAppendJSON(f *testing.F) {
	for _, s := range awkward {
		f.Add(s, s, int64(7))
	}
	f.Fuzz(func(t *testing.T, org, key string, n int64) {
		d := json.Number("1.5")
		c := accounting.Cell{Calls: n, Tokens: accounting.Tokens{Total: n}, Dollars: &d}
		s := &accounting.Summary{Org: org, GroupBy: "session", Rows: []accounting.Row{{Key: key, Metered: c}},
			Total: accounting.Row{Key: "total", Unknown: c}, Next: &key}
		checkAppendJSON(t, s)
	})
}
