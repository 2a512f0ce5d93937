package recorder_test

import (
	"context"
	"strings"
	"testing"

	"github.com/spinehq/spine/internal/pgtest"
	"github.com/spinehq/spine/recorder"
)

// A batch's writes are pipelined, but still run in the order they were
// made: a read sees the writes queued before it, so does a savepoint
// begun after them, whose rollback never takes them along, and a write
// that fails is the error of whatever sends it, named.
func TestPipelinedWritesKeepTheirOrder(t *testing.T) {
	pool, _ := pgtest.New(t)
	ctx := context.Background()
	if _, err := pool.Exec(ctx, `CREATE TABLE piped (n int PRIMARY KEY)`); err != nil {
		t.Fatal(err)
	}
	raw, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Rollback(ctx)
	tx, queue, send := recorder.Pipelined(raw)
	count := func() (n int) {
		t.Helper()
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM piped`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}

	queue("insert 1", `INSERT INTO piped VALUES (1)`)
	queue("insert 2", `INSERT INTO piped VALUES (2)`)
	if n := count(); n != 2 {
		t.Fatalf("a read after two queued writes sees %d rows", n)
	}

	queue("insert 3", `INSERT INTO piped VALUES (3)`)
	sp, err := tx.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var inside int
	if err := sp.QueryRow(ctx, `SELECT count(*) FROM piped`).Scan(&inside); err != nil || inside != 3 {
		t.Fatalf("a savepoint begun after a queued write sees %d rows (%v), want 3", inside, err)
	}
	if _, err := sp.Exec(ctx, `INSERT INTO piped VALUES (4)`); err != nil {
		t.Fatal(err)
	}
	if err := sp.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if err := send(ctx); err != nil {
		t.Fatal(err)
	}
	if n := count(); n != 3 {
		t.Fatalf("after a savepoint rolled back, %d rows; want the 3 queued before it", n)
	}

	queue("insert 1 again", `INSERT INTO piped VALUES (1)`)
	if err := send(ctx); err == nil || !strings.Contains(err.Error(), "insert 1 again") {
		t.Fatalf("a failing queued write: %v, want its name in the error", err)
	}
}
