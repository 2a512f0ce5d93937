package accounting

import (
	"context"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/spinehq/spine/internal/checksum"
	"github.com/spinehq/spine/internal/pgtest"
	"github.com/spinehq/spine/migrations"
)

// preMachineCallColumns are router_calls' columns before migration 014.
const preMachineCallColumns = `session_id, org, member, app, plan_id, execution_surface, door, status, billing,
	billing_signal, served_model, served_effort, usage, input_tokens, output_tokens, cache_read_tokens,
	cache_write_tokens, reasoning_tokens, total_cost, started_at, at`

// A database that held router calls before migration 014 comes out of it
// as the projector writes one now: each call's machine taken from its
// session's workerId (none: ""), cost_days grouped by machine, byte for
// byte (the rebuild checksum). The old database is schema "pre" of a test
// database, migrated to 013 and filled as the projector filled it then;
// the projector writes the same calls into the current schema beside it.
func TestMigrationFillsMachines(t *testing.T) {
	ctx := context.Background()
	pool, url := pgtest.New(t)
	calls := randomCalls(rand.New(rand.NewPCG(14, 14)), 300)
	writeInBatches(t, pool, rand.New(rand.NewPCG(1, 2)), calls)

	pre := preMachineDatabase(t, url, calls)
	applied, err := migrations.UpTo(ctx, pre, 14) // 014 alone, whatever migrations follow it
	if err != nil || !slices.Equal(applied, []int{14}) {
		t.Fatalf("migrate to 014: applied %v, %v", applied, err)
	}
	var named int
	if err := pre.QueryRow(ctx, `SELECT count(*) FROM router_calls WHERE worker_id <> ''`).Scan(&named); err != nil || named == 0 {
		t.Fatalf("calls with a machine after 014: %d, %v", named, err)
	}
	// Tables of later migrations are public's, for the checksum to read.
	if _, err := pre.Exec(ctx, `SET search_path TO pre, public`); err != nil {
		t.Fatal(err)
	}
	want, err := checksum.Compute(ctx, pool)
	if err != nil {
		t.Fatal(err)
	}
	got, err := checksum.Compute(ctx, pre)
	if err != nil {
		t.Fatal(err)
	}
	for _, table := range []string{"router_calls", "cost_days"} {
		if got[table] != want[table] {
			t.Errorf("%s after 014: %s, projector %s", table, got[table], want[table])
		}
	}
}

// preMachineDatabase is a connection to schema "pre", migrated to 013 and
// holding calls as the projector wrote them then: their sessions, their
// router-call rows (copied from the current schema's, less the machine)
// and migration 006's rollup of them.
func preMachineDatabase(t *testing.T, url string, calls []*Call) *pgx.Conn {
	t.Helper()
	ctx := context.Background()
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	cfg.RuntimeParams["search_path"] = "pre"
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	if _, err := conn.Exec(ctx, `CREATE SCHEMA pre`); err != nil {
		t.Fatal(err)
	}
	if _, err := migrations.UpTo(ctx, conn, 13); err != nil {
		t.Fatal(err)
	}
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	ss := make([]*session, len(calls))
	for i, c := range calls {
		ss[i] = &session{ID: c.SessionID, Org: c.Org, Member: c.Member, App: c.App, PlanID: c.PlanID,
			WorkerID: c.WorkerID, StartedAt: c.StartedAt, EndedAt: &c.At}
	}
	// The sessions' columns of 013 (sessionArrays' first ten).
	_, err = tx.Exec(ctx, `INSERT INTO accounting_sessions (session_id, org, member, app, plan_id, worker_id,
			started_at, ended_at, usage, total_cost)
		SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[],
			$7::timestamptz[], $8::timestamptz[], $9::jsonb[], $10::numeric[])`, sessionArrays(ss)[:10]...)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO router_calls SELECT `+preMachineCallColumns+` FROM public.router_calls`); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, migrationBackfill(t, 6)); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	return conn
}

// migrationBackfill is migration version's INSERT INTO cost_days, to the
// end of its file.
func migrationBackfill(t *testing.T, version int) string {
	t.Helper()
	ms, err := migrations.All()
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range ms {
		if i := strings.Index(m.SQL, "INSERT INTO cost_days"); m.Version == version && i >= 0 {
			return m.SQL[i:]
		}
	}
	t.Fatalf("migration %03d has no INSERT INTO cost_days", version)
	return ""
}
