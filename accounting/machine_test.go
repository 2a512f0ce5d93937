package accounting_test

import (
	"encoding/json"
	"maps"
	"net/url"
	"slices"
	"testing"

	"github.com/spinehq/spine/accounting"
	"github.com/spinehq/spine/internal/spinetest"
)

// machineFixture is the mixed fixture (its sessions on w1, w2 and w3, s6
// ended by w3's disconnect) plus "bare", a start that named no machine,
// and "late", started on w4 in one batch and ended in another (its machine
// read back from accounting_sessions).
func machineFixture(t *testing.T) *fixture {
	t.Helper()
	f := newFixture(t)
	f.publish(spinetest.ReadEnvelopes(t, "../testdata/accounting/mixed.jsonl")...)
	bare, bareEnd := onWorker("bare", ""), spinetest.End("bare", "done", "m", "")
	bareEnd.Usage, bareEnd.Billing, bareEnd.TotalCost = usage(3, 4, 0, 0), "subscription", ptr(0.5)
	f.publish(bare, bareEnd, onWorker("late", "w4"))
	f.wait()
	f.publish(spinetest.End("late", "failed", "", ""))
	f.wait()
	return f
}

// A router call keeps its session's machine (its start's workerId, "" when
// it named none), whichever batch ends it and however it ends, and the
// rollup counts each machine's calls once.
func TestRouterCallsKeepTheirMachine(t *testing.T) {
	f := machineFixture(t)
	want := map[string]string{"acc-s1": "w1", "acc-s2": "w1", "acc-s3": "w2", "acc-s4": "w2", "acc-s5": "w1",
		"acc-s6": "w3", "acc-s7": "w2", "acc-s8": "w1", "acc-g1": "w9", "bare": "", "late": "w4"}
	got := f.strings(`SELECT session_id, worker_id FROM router_calls`)
	if !maps.Equal(got, want) {
		t.Errorf("router calls' machines %v\nwant %v", got, want)
	}
	days := f.strings(`SELECT org || '/' || worker_id, sum(calls)::text FROM cost_days GROUP BY 1`)
	if want := map[string]string{"acme/w1": "4", "acme/w2": "3", "acme/w3": "1", "acme/": "1", "acme/w4": "1",
		"globex/w9": "1"}; !maps.Equal(days, want) {
		t.Errorf("cost_days' calls by machine %v\nwant %v", days, want)
	}
}

// groupBy=machine counts each call once under its session's machine, the
// billing classes apart, costs as reported and null where none was: acme's
// machines, by hand (the mixed fixture's sessions as in
// TestSummaryOfTheMixedFixture, plus bare and late):
//
//	""  bare         subscription in 3 out 4                     $0.5
//	w1  s1, s8       metered      in 1300+1000 out 50+500 cr 1000 cw 200  $0.25+$0.75
//	    s2           subscription in 10 out 5                    $0.05
//	    s5           unknown      in 70 out 80 cw 50             $1.5
//	w2  s3           metered      in 500 out 300 cr 100 reasoning 120  no cost
//	    s7           subscription in 5 out 0                     $0 (reported)
//	    s4           unknown, no usage                           no cost
//	w3  s6           unknown (disconnected)                      no cost
//	w4  late         unknown, no usage                           no cost
//
// The machines' total is the days' total, and a member's summary has only
// the machines of their own calls.
func TestSummaryByMachine(t *testing.T) {
	f := machineFixture(t)
	none, silent := cell{}, cell{1, 0, 0, accounting.Tokens{}, ""}
	window := url.Values{"from": {"2026-11-01"}, "to": {"2026-11-30"}}
	byMachine := summary(t, f, "acme", url.Values{"from": window["from"], "to": window["to"], "groupBy": {"machine"}})
	var keys []string
	for _, r := range byMachine.Rows {
		keys = append(keys, r.Key)
	}
	if want := []string{"", "w1", "w2", "w3", "w4"}; !slices.Equal(keys, want) || byMachine.GroupBy != "machine" {
		t.Fatalf("machines %q by %s, want %q", keys, byMachine.GroupBy, want)
	}
	rows := byMachine.Rows
	checkRow(t, "no machine", rows[0], none, cell{1, 1, 1, tokens(3, 4, 0, 0, 0), "0.5"}, none)
	checkRow(t, "w1", rows[1], cell{2, 2, 2, tokens(2300, 550, 1000, 200, 0), "1.00"},
		cell{1, 1, 1, tokens(10, 5, 0, 0, 0), "0.05"}, cell{1, 1, 1, tokens(70, 80, 0, 50, 0), "1.5"})
	checkRow(t, "w2", rows[2], cell{1, 1, 0, tokens(500, 300, 100, 0, 120), ""}, cell{1, 1, 1, tokens(5, 0, 0, 0, 0), "0"},
		silent)
	checkRow(t, "w3", rows[3], none, none, silent)
	checkRow(t, "w4", rows[4], none, none, silent)

	byDay := summary(t, f, "acme", window)
	if a, b := jsonOf(t, byMachine.Total), jsonOf(t, byDay.Total); a != b {
		t.Errorf("total by machine %s\n     by day %s", a, b)
	}
	checkRow(t, "total", byMachine.Total, cell{3, 3, 2, tokens(2800, 850, 1100, 200, 120), "1.00"},
		cell{3, 3, 3, tokens(18, 9, 0, 0, 0), "0.55"}, cell{4, 1, 1, tokens(70, 80, 0, 50, 0), "1.5"})

	sq, err := accounting.ParseSummaryQuery(url.Values{"from": window["from"], "to": window["to"], "groupBy": {"machine"}},
		byDay.To)
	if err != nil {
		t.Fatal(err)
	}
	sq.Member = "bob"
	bob, err := accounting.Summarize(ctx, f.Pool, "acme", sq)
	if err != nil || len(bob.Rows) != 1 || bob.Rows[0].Key != "w2" || jsonOf(t, bob.Rows[0]) != jsonOf(t, rows[2]) {
		t.Fatalf("bob's machines %+v, %v; want w2 alone", bob, err)
	}

	// The page offers the grouping and names the empty machine.
	d := accounting.Page{Summary: byMachine, Measure: "calls"}.Data()
	if !slices.Contains(d.GroupBys, "machine") || d.Rows[0].Label != "(none)" || d.Bars[0].Label != "(none)" {
		t.Errorf("cost page by machine: group-bys %v, first row %q", d.GroupBys, d.Rows[0].Label)
	}
}

func jsonOf(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// strings reads a query's rows of two text columns as a map.
func (f *fixture) strings(sql string) map[string]string {
	f.T.Helper()
	rows, err := f.Pool.Query(ctx, sql)
	if err != nil {
		f.T.Fatal(err)
	}
	defer rows.Close()
	out := map[string]string{}
	for rows.Next() {
		var k, v string
		if err := rows.Scan(&k, &v); err != nil {
			f.T.Fatal(err)
		}
		out[k] = v
	}
	if err := rows.Err(); err != nil {
		f.T.Fatal(err)
	}
	return out
}
