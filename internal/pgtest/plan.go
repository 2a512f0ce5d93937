package pgtest

import (
	"encoding/json"
	"fmt"
	"testing"
)

// Scans lists how an EXPLAIN (FORMAT JSON) plan reads relation: each node
// on it as "Node Type Index Name" ("Index Scan sessions_pkey", "Seq Scan
// <nil>"), for a test that a query keeps to its index. A bitmap scan names
// no index on the relation's node, so it never passes for an index's.
func Scans(t testing.TB, plan []byte, relation string) []string {
	t.Helper()
	var doc []map[string]any
	if err := json.Unmarshal(plan, &doc); err != nil || len(doc) == 0 {
		t.Fatalf("pgtest: a plan of no JSON: %v\n%s", err, plan)
	}
	var scans []string
	var walk func(map[string]any)
	walk = func(n map[string]any) {
		if n["Relation Name"] == relation {
			scans = append(scans, fmt.Sprint(n["Node Type"], " ", n["Index Name"]))
		}
		kids, _ := n["Plans"].([]any)
		for _, k := range kids {
			if kid, ok := k.(map[string]any); ok {
				walk(kid)
			}
		}
	}
	root, _ := doc[0]["Plan"].(map[string]any)
	walk(root)
	return scans
}
