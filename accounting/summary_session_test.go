package accounting_test

import (
	"net/url"
	"testing"

	"github.com/spinehq/spine/accounting"
	"github.com/spinehq/spine/internal/spinetest"
)

// groupBy=session is a row per session (router_calls holds one call per
// session), keyed by session id, in id order; its rows add up to the total.
func TestSummaryBySession(t *testing.T) {
	f := newFixture(t)
	f.publish(spinetest.ReadEnvelopes(t, "../testdata/accounting/mixed.jsonl")...)
	f.wait()
	s := summary(t, f, "acme", url.Values{"from": {"2026-11-01"}, "to": {"2026-11-30"}, "groupBy": {"session"}})
	var keys []string
	var calls int64
	for _, r := range s.Rows {
		keys = append(keys, r.Key)
		calls += r.Metered.Calls + r.Subscription.Calls + r.Unknown.Calls
	}
	want := []string{"acc-s1", "acc-s2", "acc-s3", "acc-s4", "acc-s5", "acc-s6", "acc-s7", "acc-s8"}
	if len(keys) != len(want) || calls != 8 || s.GroupBy != "session" {
		t.Fatalf("sessions %v (%d calls), want %v", keys, calls, want)
	}
	for i := range want {
		if keys[i] != want[i] {
			t.Fatalf("sessions %v, want %v", keys, want)
		}
	}
	none := cell{}
	checkRow(t, "acc-s1", s.Rows[0], cell{1, 1, 1, tokens(1300, 50, 1000, 200, 0), "0.25"}, none, none)
	checkRow(t, "acc-s4", s.Rows[3], none, none, cell{1, 0, 0, accounting.Tokens{}, ""})
}
