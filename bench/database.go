package bench

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/spinehq/spine/internal/pgboot"
)

// dropTimeout bounds dropping the run's database, which happens even when
// the run's context was cancelled.
const dropTimeout = 30 * time.Second

// database is the fresh database a run writes into, on a server found the
// way `spine serve` finds one.
type database struct {
	adminURL string
	name     string
	url      string
	source   string
	stop     func() error // stops a private cluster; a no-op otherwise
}

// createDatabase finds a server (starting a private cluster under dataDir
// if it must) and creates spine_bench_<random> on it.
func createDatabase(ctx context.Context, explicitURL, dataDir string, log *slog.Logger) (*database, error) {
	res, err := pgboot.Find(ctx, pgboot.Options{URL: explicitURL, DataDir: dataDir, Database: "postgres", Logger: log})
	if err != nil {
		return nil, err
	}
	db := &database{adminURL: res.URL, name: "spine_bench_" + randomHex(6), source: res.Source, stop: res.Stop}
	if db.url, err = pgboot.WithDatabase(res.URL, db.name); err != nil {
		return nil, errors.Join(err, res.Stop())
	}
	if err := db.exec(ctx, "CREATE DATABASE "+pgx.Identifier{db.name}.Sanitize()); err != nil {
		return nil, errors.Join(fmt.Errorf("create database %s: %w", db.name, err), res.Stop())
	}
	return db, nil
}

// drop removes the database, disconnecting anyone still on it, and stops a
// private cluster.
func (db *database) drop() error {
	ctx, cancel := context.WithTimeout(context.Background(), dropTimeout)
	defer cancel()
	err := db.exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{db.name}.Sanitize()+" WITH (FORCE)")
	if err != nil {
		err = fmt.Errorf("drop database %s: %w", db.name, err)
	}
	return errors.Join(err, db.stop())
}

func (db *database) exec(ctx context.Context, sql string) error {
	conn, err := pgx.Connect(ctx, db.adminURL)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	_, err = conn.Exec(ctx, sql)
	return err
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // crypto/rand.Read never fails
	return hex.EncodeToString(b)
}
