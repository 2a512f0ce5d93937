package migrations

import (
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"io/fs"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
)

//go:embed *.sql
var files embed.FS

// Migration is one numbered schema change.
type Migration struct {
	Version int
	Name    string
	SQL     string
}

// All returns the embedded migrations in version order, skipping .down.sql files.
func All() ([]Migration, error) {
	names, err := fs.Glob(files, "*.sql")
	if err != nil {
		return nil, err
	}
	var out []Migration
	for _, n := range names {
		if strings.HasSuffix(n, ".down.sql") {
			continue
		}
		m, err := parse(n)
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Version < out[j].Version })
	for i := 1; i < len(out); i++ {
		if out[i].Version == out[i-1].Version {
			return nil, fmt.Errorf("migrations %s and %s share version %d", out[i-1].Name, out[i].Name, out[i].Version)
		}
	}
	return out, nil
}

func parse(name string) (Migration, error) {
	num, rest, ok := strings.Cut(name, "_")
	v, err := strconv.Atoi(num)
	if !ok || err != nil {
		return Migration{}, fmt.Errorf("migration %q: want NNN_name.sql", name)
	}
	body, err := files.ReadFile(name)
	if err != nil {
		return Migration{}, err
	}
	return Migration{Version: v, Name: strings.TrimSuffix(rest, ".sql"), SQL: string(body)}, nil
}

// Key is a digest of every migration's text: two databases migrated with the
// same key have the same schema. Test templates are named by it.
func Key() string {
	ms, err := All()
	if err != nil {
		panic(err)
	}
	h := sha256.New()
	for _, m := range ms {
		fmt.Fprintf(h, "%d %s\n%s\n", m.Version, m.Name, m.SQL)
	}
	return hex.EncodeToString(h.Sum(nil))[:12]
}

// Up applies every migration not yet applied, each in its own transaction
// together with its version row. It returns the versions it applied.
func Up(ctx context.Context, conn *pgx.Conn) ([]int, error) {
	return UpTo(ctx, conn, math.MaxInt)
}

// UpTo is Up stopping after version last: a test makes a database as an
// older spine left it, fills it, then lets Up apply the rest.
func UpTo(ctx context.Context, conn *pgx.Conn, last int) ([]int, error) {
	ms, err := All()
	if err != nil {
		return nil, err
	}
	ms = slices.DeleteFunc(ms, func(m Migration) bool { return m.Version > last })
	if _, err := conn.Exec(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`); err != nil {
		return nil, fmt.Errorf("create schema_migrations: %w", err)
	}
	// One migrator at a time across processes.
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock(7070001)`); err != nil {
		return nil, fmt.Errorf("lock migrations: %w", err)
	}
	defer conn.Exec(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock(7070001)`)
	var applied []int
	for _, m := range ms {
		ok, err := apply(ctx, conn, m)
		if err != nil {
			return applied, err
		}
		if ok {
			applied = append(applied, m.Version)
		}
	}
	return applied, nil
}

func apply(ctx context.Context, conn *pgx.Conn, m Migration) (bool, error) {
	tx, err := conn.Begin(ctx)
	if err != nil {
		return false, fmt.Errorf("migration %03d: %w", m.Version, err)
	}
	defer tx.Rollback(ctx)
	var exists bool
	if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM schema_migrations WHERE version = $1)`, m.Version).Scan(&exists); err != nil {
		return false, fmt.Errorf("migration %03d: %w", m.Version, err)
	}
	if exists {
		return false, nil
	}
	if _, err := tx.Exec(ctx, m.SQL); err != nil {
		return false, fmt.Errorf("migration %03d_%s: %w", m.Version, m.Name, err)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO schema_migrations (version, name) VALUES ($1, $2)`, m.Version, m.Name); err != nil {
		return false, fmt.Errorf("migration %03d version row: %w", m.Version, err)
	}
	return true, tx.Commit(ctx)
}
