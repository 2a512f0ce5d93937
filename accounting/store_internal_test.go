package accounting

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/spinehq/spine/internal/pgtest"
	"github.com/spinehq/spine/streams"
)

// inTx runs f in a transaction of a fresh database and returns its error;
// the transaction is rolled back.
func inTx(t *testing.T, f func(tx pgx.Tx) error) error {
	t.Helper()
	pool, _ := pgtest.New(t)
	tx, err := pool.Begin(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(context.Background())
	return f(tx)
}

// The set-based writes store each row as the row-at-a-time ones did: NULL
// usage, tokens and cost stay NULL, a cost keeps its decimal digits, an
// escaped NUL in usage becomes U+FFFD, and times keep their microseconds.
func TestSetWritesRoundTrip(t *testing.T) {
	ctx := context.Background()
	at := time.Date(2026, 11, 2, 23, 59, 59, 999999000, time.UTC)
	cost := 0.1
	calls := []*Call{
		{SessionID: "s1", Org: "acme", Member: "alice", App: "codex", Status: "done", Billing: BillingMetered,
			Usage: json.RawMessage(`{"raw":"a\u0000b"}`), Tokens: &Tokens{Input: 3, Output: 4, Reasoning: 1},
			TotalCost: &cost, StartedAt: at.Add(-time.Minute), At: at},
		{SessionID: "s2", Org: "acme", Member: "bob", App: "claude-code", Status: "disconnected",
			Billing: BillingUnknown, StartedAt: at, At: at.Add(time.Microsecond)},
	}
	err := inTx(t, func(tx pgx.Tx) error {
		if err := insertCalls(ctx, tx, calls); err != nil {
			return err
		}
		var usage, costText *string
		var in, rs *int64
		var got time.Time
		if err := tx.QueryRow(ctx, `SELECT usage::text, input_tokens, reasoning_tokens, total_cost::text, at
			FROM router_calls WHERE session_id = 's1'`).Scan(&usage, &in, &rs, &costText, &got); err != nil {
			return err
		}
		if usage == nil || *usage != `{"raw": "a`+"\ufffd"+`b"}` || *in != 3 || *rs != 1 || *costText != "0.1" || !got.Equal(at) {
			t.Errorf("s1: usage %v in %v reasoning %v cost %v at %v", usage, in, rs, costText, got)
		}
		if err := tx.QueryRow(ctx, `SELECT usage::text, input_tokens, total_cost::text FROM router_calls
			WHERE session_id = 's2'`).Scan(&usage, &in, &costText); err != nil {
			return err
		}
		if usage != nil || in != nil || costText != nil {
			t.Errorf("s2: usage %v in %v cost %v, want NULLs", usage, in, costText)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// A row PostgreSQL refuses fails the batch's statement with its data or
// constraint SQLSTATE, so the projector isolates the message that made it.
func TestRefusedRowIsADataError(t *testing.T) {
	ctx := context.Background()
	negative := -1.0
	at := time.Date(2026, 11, 2, 9, 0, 0, 0, time.UTC)
	for name, c := range map[string]*Call{
		"negative cost": {SessionID: "s1", Org: "acme", Member: "m", App: "a", Status: "done", Billing: BillingMetered,
			TotalCost: &negative, StartedAt: at, At: at},
		"NUL in text": {SessionID: "s1", Org: "acme", Member: "m", App: "a", Status: "done", Billing: BillingMetered,
			ServedModel: "gpt\x00", StartedAt: at, At: at},
	} {
		err := inTx(t, func(tx pgx.Tx) error {
			return insertCalls(ctx, tx, []*Call{{SessionID: "s0", Org: "acme", Member: "m", App: "a", Status: "done",
				Billing: BillingUnknown, StartedAt: at, At: at}, c})
		})
		if !streams.IsDataError(err) {
			t.Errorf("%s: %v, want a data error", name, err)
		}
	}
}

// Two budgets for one plan in a batch leave the later one, as two
// statements did.
func TestLatestBudgetInABatchWins(t *testing.T) {
	ctx := context.Background()
	ten, five := Dollars("10"), Dollars("5.50")
	at := time.Date(2026, 11, 2, 9, 0, 0, 0, time.UTC)
	err := inTx(t, func(tx pgx.Tx) error {
		err := upsertBudgets(ctx, tx, []*Budget{
			{PlanID: "p1", Org: "acme", Member: "alice", At: at, DollarCeiling: &ten},
			{PlanID: "p2", Org: "acme", Member: "alice", At: at, LoopCap: ptr(int64(3))},
			{PlanID: "p1", Org: "acme", Member: "bob", At: at.Add(time.Second), DollarCeiling: &five},
		})
		if err != nil {
			return err
		}
		var ceiling, by string
		var n int
		if err := tx.QueryRow(ctx, `SELECT dollar_ceiling::text, set_by, (SELECT count(*) FROM plan_budgets)
			FROM plan_budgets WHERE plan_id = 'p1'`).Scan(&ceiling, &by, &n); err != nil {
			return err
		}
		if ceiling != "5.50" || by != "bob" || n != 2 {
			t.Errorf("p1 ceiling %s set by %s, %d budgets; want 5.50 by bob, 2", ceiling, by, n)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func ptr[T any](v T) *T { return &v }

// A listing sorted here is in the byte order PostgreSQL's COLLATE "C"
// pages in: keys sharing their first eight bytes, shorter keys, NUL and
// high bytes included.
func TestSessionCallRowsSortBytewise(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 7))
	parts := []string{"", "a", "ab", "abcdefgh", "abcdefghi", "\x00", "\xff", "Z", "session-", "é"}
	var calls []sessionCall
	var want []string
	for range 2000 {
		k := parts[r.IntN(len(parts))] + parts[r.IntN(len(parts))] + parts[r.IntN(len(parts))]
		calls = append(calls, sessionCall{key: k, billing: BillingMetered})
		want = append(want, k)
	}
	slices.Sort(want)
	rows := sessionCallRows(calls, true)
	for i := range rows {
		if rows[i].Key != want[i] || rows[i].Metered.Calls != 1 {
			t.Fatalf("row %d: %q (%d calls), want %q", i, rows[i].Key, rows[i].Metered.Calls, want[i])
		}
	}
}
