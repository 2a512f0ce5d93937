package recorder_test

import (
	"slices"
	"testing"

	"github.com/spinehq/spine/internal/pgtest"
	"github.com/spinehq/spine/recorder"
)

// The hole reads take a range of observations_holes, never a walk of the
// run's observations: with 40,000 results on the run, no statistics
// (autovacuum is off where this runs) and a generic plan (a prepared
// statement's, as pgx's may become), each reads observations only through
// that index. Without migration 017 both walked the run's primary key.
func TestHoleReadsUseTheirIndex(t *testing.T) {
	pool, _ := pgtest.New(t)
	for _, sql := range []string{
		`INSERT INTO observations (run_id, idx, step_id, kind, body, at) SELECT 'run-big', g, 'run-big.s' || g, 'result',
			'{"exitCode":0,"output":"ok"}', now() FROM generate_series(1, 40000) g`,
		`INSERT INTO observations (run_id, idx, step_id, kind, body, at) SELECT 'run-big', 40000 + g, '', 'note',
			json_build_object('note', 'hole', 'from', g * 10, 'to', g * 10 + 5, 'missing', 6), now()
			FROM generate_series(1, 200) g`,
	} {
		if _, err := pool.Exec(ctx, sql); err != nil {
			t.Fatal(err)
		}
	}
	conn, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, `SET plan_cache_mode = force_generic_plan`); err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]struct {
		sql  string
		args string
	}{"holes after": {recorder.HolesAfterSQL, "('run-big', 500, 501)"}, "in a hole": {recorder.InHoleSQL, "('run-big', 503)"}} {
		if _, err := conn.Exec(ctx, "PREPARE hole_read AS "+c.sql); err != nil {
			t.Fatal(err)
		}
		var plan []byte
		if err := conn.QueryRow(ctx, "EXPLAIN (FORMAT JSON) EXECUTE hole_read"+c.args).Scan(&plan); err != nil {
			t.Fatal(err)
		}
		if _, err := conn.Exec(ctx, "DEALLOCATE hole_read"); err != nil {
			t.Fatal(err)
		}
		nodes := pgtest.Scans(t, plan, "observations")
		if len(nodes) == 0 || slices.ContainsFunc(nodes, func(n string) bool {
			return n != "Index Scan observations_holes" && n != "Index Scan Backward observations_holes"
		}) {
			t.Errorf("%s reads observations by %v:\n%s", name, nodes, plan)
		}
	}
	// And they answer as before.
	var in, out bool
	if err := pool.QueryRow(ctx, recorder.InHoleSQL, "run-big", int64(503)).Scan(&in); err != nil {
		t.Fatal(err)
	}
	if err := pool.QueryRow(ctx, recorder.InHoleSQL, "run-big", int64(507)).Scan(&out); err != nil || !in || out {
		t.Fatalf("seq 503 in a hole: %v, 507: %v (%v)", in, out, err)
	}
}
