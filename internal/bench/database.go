package bench

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"log/slog"
	"time"

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
	if db.url, err = pgboot.CreateDatabase(ctx, res.URL, db.name); err != nil {
		return nil, errors.Join(err, res.Stop())
	}
	timeWAL(ctx, db.url, db.name)
	return db, nil
}

// drop removes the database, disconnecting anyone still on it, and stops a
// private cluster.
func (db *database) drop() error {
	ctx, cancel := context.WithTimeout(context.Background(), dropTimeout)
	defer cancel()
	return errors.Join(pgboot.DropDatabase(ctx, db.adminURL, db.name), db.stop())
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // crypto/rand.Read never fails
	return hex.EncodeToString(b)
}
