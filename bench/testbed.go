package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spinehq/spine/internal/config"
	"github.com/spinehq/spine/node"
)

// testbed is what a run measures: a node with an in-process-only NATS
// server and a fresh database, in a data directory of its own.
type testbed struct {
	dir     string
	db      *database
	node    *node.Node
	commits *commits
}

// startTestbed creates the data directory and database and starts the node.
// On error, whatever was made is removed.
func startTestbed(ctx context.Context, cfg Config) (tb *testbed, err error) {
	tb = &testbed{commits: newCommits()}
	defer func() {
		if err != nil {
			err = errors.Join(err, tb.close())
		}
	}()
	if tb.dir, err = os.MkdirTemp("", "spine-bench-"); err != nil {
		return nil, fmt.Errorf("data dir: %w", err)
	}
	// A private cluster runs as the postgres user when we are root: it must
	// be able to enter the directory.
	if err := os.Chmod(tb.dir, 0o755); err != nil {
		return nil, fmt.Errorf("data dir: %w", err)
	}
	if tb.db, err = createDatabase(ctx, cfg.DatabaseURL, tb.dir, cfg.Logger); err != nil {
		return nil, err
	}
	nodeCfg := config.Config{DatabaseURL: tb.db.url, NATSListen: "off", HTTPAddr: "127.0.0.1:0",
		DataDir: filepath.Join(tb.dir, "node"), Replicas: 1}
	tb.node, err = node.Start(ctx, nodeCfg, nil, &node.Options{BatchSize: cfg.Batch, OnCommit: tb.commits.onCommit})
	if err != nil {
		return nil, fmt.Errorf("start node: %w", err)
	}
	return tb, nil
}

// close stops the node, drops the database and removes the data directory.
func (tb *testbed) close() error {
	if tb.node != nil {
		tb.node.Stop()
	}
	var err error
	if tb.db != nil {
		err = tb.db.drop()
	}
	if tb.dir != "" {
		err = errors.Join(err, os.RemoveAll(tb.dir))
	}
	return err
}
