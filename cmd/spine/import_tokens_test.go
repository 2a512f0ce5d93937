package main

import (
	"encoding/json"
	"testing"

	"github.com/spinehq/spine/accounting"
	"github.com/spinehq/spine/importer"
)

// One token convention on every surface: what `spine import` says of each
// session is what its router call says in `spine cost` and what `spine read
// session` says, count by count (input with cache reads and writes, total =
// input + output).
func TestImportTokensAreTheCostReportsTokens(t *testing.T) {
	_, caughtUp := testNode(t)
	out, err := capture(t, "import", "--json", "--all-sessions", sharedFixtures(t))
	var sum importer.Summary
	if err != nil || json.Unmarshal([]byte(out), &sum) != nil {
		t.Fatalf("import: %v\n%s", err, out)
	}
	caughtUp()
	out, err = capture(t, "cost", "--json", "--group-by", "session", "--from", "2020-01-01", "--to", "2029-12-31")
	var cost accounting.Summary
	if err != nil || json.Unmarshal([]byte(out), &cost) != nil {
		t.Fatalf("cost: %v\n%s", err, out)
	}
	rows := map[string]accounting.Tokens{}
	for _, r := range cost.Rows {
		// every billing class: a session's tokens are in one, whichever
		// its output's signal names, and in no other
		var t accounting.Tokens
		for _, c := range []accounting.Cell{r.Metered, r.Subscription, r.Unknown} {
			t = accounting.Tokens{Input: t.Input + c.Tokens.Input, Output: t.Output + c.Tokens.Output,
				CacheRead: t.CacheRead + c.Tokens.CacheRead, CacheWrite: t.CacheWrite + c.Tokens.CacheWrite,
				Reasoning: t.Reasoning + c.Tokens.Reasoning, Total: t.Total + c.Tokens.Total}
		}
		rows[r.Key] = t
	}
	compared := 0
	for _, s := range sum.PerSession {
		got, ok := rows[s.SessionID]
		switch {
		case !ok:
			t.Errorf("session %s: no router call", s.SessionID)
		case got != s.Tokens:
			t.Errorf("session %s: import says %+v, cost says %+v", s.SessionID, s.Tokens, got)
		case s.Tokens.Total != 0:
			compared++
			out, err := capture(t, "read", "session", s.SessionID, "--json")
			var read struct {
				Tokens *accounting.Tokens `json:"tokens"`
			}
			if err != nil || json.Unmarshal([]byte(out), &read) != nil || read.Tokens == nil || *read.Tokens != s.Tokens {
				t.Errorf("session %s: import says %+v, read session says %v (%v)", s.SessionID, s.Tokens, read.Tokens, err)
			}
		}
	}
	if compared == 0 || sum.Tokens.Input <= sum.Tokens.CacheRead {
		t.Fatalf("nothing compared (%d sessions, %+v)", len(sum.PerSession), sum.Tokens)
	}
}
