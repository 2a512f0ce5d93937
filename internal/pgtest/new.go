package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/spinehq/spine/internal/pgboot"
)

// cleanupTimeout bounds dropping a test's database; the test's own context
// is already cancelled by then.
const cleanupTimeout = 30 * time.Second

// New returns a pool on a fresh database cloned from the template, and the
// database's URL. Both are gone when the test ends: the pool is closed and
// the database dropped.
func New(t testing.TB) (*pgxpool.Pool, string) {
	t.Helper()
	if adminURL == "" {
		t.Fatal("pgtest: no template; call pgtest.Main or pgtest.Setup from TestMain")
	}
	name := "spine_t_" + randomHex(8)
	if err := cloneTemplate(t.Context(), name); err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	u, err := pgboot.WithDatabase(adminURL, name)
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	pool, err := pgxpool.New(t.Context(), u)
	if err != nil {
		drop(t, name)
		t.Fatalf("pgtest: open pool on %s: %v", name, err)
	}
	t.Cleanup(func() {
		pool.Close()
		drop(t, name)
	})
	return pool, u
}

// cloneTemplate creates database name from the template, holding the
// template lock shared so no template is being built meanwhile.
func cloneTemplate(ctx context.Context, name string) error {
	conn, err := pgx.Connect(ctx, adminURL)
	if err != nil {
		return fmt.Errorf("connect admin database: %w", err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock_shared($1)", templateLock); err != nil {
		return fmt.Errorf("lock templates: %w", err)
	}
	sql := "CREATE DATABASE " + pgx.Identifier{name}.Sanitize() +
		" TEMPLATE " + pgx.Identifier{template}.Sanitize()
	if _, err := conn.Exec(ctx, sql); err != nil {
		return fmt.Errorf("clone %s into %s: %w", template, name, err)
	}
	return nil
}

// drop removes a test's database, disconnecting anything the test left
// connected.
func drop(t testing.TB, name string) {
	ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
	defer cancel()
	conn, err := pgx.Connect(ctx, adminURL)
	if err != nil {
		t.Errorf("pgtest: drop %s: connect admin database: %v", name, err)
		return
	}
	defer conn.Close(context.Background())
	if err := dropDatabase(ctx, conn, name); err != nil {
		t.Errorf("pgtest: %v", err)
	}
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b) // never fails since Go 1.24
	return hex.EncodeToString(b)
}
