package pgtest_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/spinehq/spine/internal/pgtest"
)

// migrate is the whole schema of this test package.
func migrate(ctx context.Context, conn *pgx.Conn) error {
	_, err := conn.Exec(ctx, `CREATE TABLE items (id int PRIMARY KEY, name text NOT NULL);
		INSERT INTO items VALUES (1, 'seed')`)
	return err
}

func TestMain(m *testing.M) {
	pgtest.Main(m, "pgtest self-test v1", migrate)
}

func TestNewDatabasesAreIndependent(t *testing.T) {
	a, urlA := pgtest.New(t)
	b, urlB := pgtest.New(t)
	if urlA == urlB {
		t.Fatalf("both databases have URL %s", urlA)
	}
	if _, err := a.Exec(t.Context(), "INSERT INTO items VALUES (2, 'only in a')"); err != nil {
		t.Fatalf("insert into a: %v", err)
	}
	if got := countItems(t, a); got != 2 {
		t.Fatalf("a has %d items, want 2", got)
	}
	if got := countItems(t, b); got != 1 {
		t.Fatalf("b has %d items, want the 1 seeded by the template", got)
	}
}

func TestNewInParallel(t *testing.T) {
	for i := range 4 {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			t.Parallel()
			pool, _ := pgtest.New(t)
			if got := countItems(t, pool); got != 1 {
				t.Fatalf("fresh database has %d items, want 1", got)
			}
		})
	}
}

func TestDatabaseDroppedAfterTest(t *testing.T) {
	var name string
	t.Run("uses", func(t *testing.T) {
		pool, _ := pgtest.New(t)
		if err := pool.QueryRow(t.Context(), "SELECT current_database()").Scan(&name); err != nil {
			t.Fatalf("current database: %v", err)
		}
	})
	conn, err := pgx.Connect(t.Context(), pgtest.AdminURL())
	if err != nil {
		t.Fatalf("connect admin: %v", err)
	}
	defer conn.Close(context.Background())
	var exists bool
	err = conn.QueryRow(t.Context(), "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", name).Scan(&exists)
	if err != nil {
		t.Fatalf("look up %s: %v", name, err)
	}
	if exists {
		t.Fatalf("database %s outlived its test", name)
	}
}

func countItems(t *testing.T, pool *pgxpool.Pool) int {
	t.Helper()
	var n int
	if err := pool.QueryRow(t.Context(), "SELECT count(*) FROM items").Scan(&n); err != nil {
		t.Fatalf("count items: %v", err)
	}
	return n
}
