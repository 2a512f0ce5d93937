package accounting_test

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/spinehq/spine/accounting"
)

// listing is a session listing the size of the bench corpus's: a row per
// session, one cell of three filled.
func listing() *accounting.Summary {
	d := json.Number("0.123456")
	s := &accounting.Summary{Org: "dev", GroupBy: "session", From: time.Now(), To: time.Now()}
	for i := range 17101 {
		c := accounting.Cell{Calls: 1, CallsWithUsage: 1, CallsWithCost: 1, Dollars: &d,
			Tokens: accounting.Tokens{Input: 123456, Output: 7890, CacheRead: 100000, Total: 131346}}
		s.Rows = append(s.Rows, accounting.Row{Key: fmt.Sprintf("%032x-%d", i*7919, i), Metered: c})
	}
	return s
}

func BenchmarkAppendJSON(b *testing.B) {
	s, buf := listing(), make([]byte, 0, 10<<20)
	for b.Loop() {
		out, err := s.AppendJSON(buf[:0])
		if err != nil {
			b.Fatal(err)
		}
		b.SetBytes(int64(len(out)))
	}
}

// What the server wrote with before: the same bytes.
func BenchmarkEncodingJSON(b *testing.B) {
	s := listing()
	for b.Loop() {
		out, err := json.Marshal(s)
		if err != nil {
			b.Fatal(err)
		}
		b.SetBytes(int64(len(out)))
	}
}
