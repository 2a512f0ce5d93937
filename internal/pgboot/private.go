package pgboot

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"strconv"
	"sync"
)

// findPrivate runs a cluster of spine's own under opts.DataDir/pg.
func findPrivate(ctx context.Context, opts Options, localWhy string) (*Result, error) {
	binDir := findBinDir(opts.BinDirs)
	if binDir == "" {
		return nil, noPostgresError(opts.LocalAddr, localWhy, filepath.Join(opts.DataDir, "pg"))
	}
	r, err := newRunner(binDir)
	if err == nil {
		err = r.checkReachable(opts.DataDir)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %s, and %w", ErrNoPostgres, localWhy, err)
	}
	c := newCluster(opts.DataDir, r, opts.Logger)
	port, started, err := c.ensureRunning(ctx)
	if err != nil {
		return nil, fmt.Errorf("%w: %s, and the private cluster in %s failed: %w",
			ErrNoPostgres, localWhy, c.dir, err)
	}
	addr := net.JoinHostPort(loopback, strconv.Itoa(port))
	if err := ensureDatabaseAt(ctx, addr, "postgres", opts.Database); err != nil {
		return nil, c.unusable(started, err)
	}
	opts.Logger.Info("pgboot: using private postgres", "source", "private",
		"dir", c.dir, "addr", addr, "database", opts.Database)
	url := serverURL(addr, "postgres", opts.Database)
	stop := sync.OnceValue(func() error { return c.stop(context.Background()) })
	return &Result{URL: url, Source: "private", Stop: stop}, nil
}

// unusable explains a cluster that runs but cannot be used. One we just
// started is stopped again. One we found is left alone: its postmaster.pid
// may name a process that merely reuses a dead server's pid, and pg_ctl stop
// would signal that process.
func (c *cluster) unusable(started bool, err error) error {
	if started {
		_ = c.stop(context.Background())
		return fmt.Errorf("private cluster in %s: %w", c.dir, err)
	}
	return fmt.Errorf("private cluster in %s: postmaster.pid says a server runs, but it "+
		"does not answer (if no postgres runs on %s, delete its postmaster.pid): %w",
		c.dir, c.dir, err)
}
