package accounting_test

import (
	"maps"
	"testing"

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
