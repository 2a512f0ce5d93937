package bench

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/spinehq/spine/node"
)

// testbed is what a run measures: Config.Instances nodes on one log (an
// in-process NATS server, or a three-server cluster) and a fresh database,
// in a data directory of its own.
type testbed struct {
	dir        string
	db         *database
	node       *node.Node // the first instance: the raw baseline and verification use it
	instances  []*instance
	cluster    *natsCluster // nil: one embedded server
	replicas   int
	commits    *commits
	partitions int
	burst      *ScaleBurst // each instance's part in spine's first burst
}

// startTestbed creates the data directory and database and starts the nodes.
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
	if err := tb.startInstances(ctx, cfg); err != nil {
		return nil, err
	}
	return tb, nil
}

// close stops the nodes, drops the database and removes the data directory.
func (tb *testbed) close() error {
	tb.stopInstances()
	var err error
	if tb.db != nil {
		err = tb.db.drop()
	}
	if tb.dir != "" {
		err = errors.Join(err, os.RemoveAll(tb.dir))
	}
	return err
}
