package pgboot

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
)

// statusNotRunning is pg_ctl status's exit code when no server runs.
const statusNotRunning = 3

// A cluster is a private PostgreSQL data directory and the server on it.
type cluster struct {
	dir     string // the data directory, DataDir/pg
	logFile string // the server's log, DataDir/pg.log
	run     *runner
	log     *slog.Logger
}

func newCluster(dataDir string, r *runner, log *slog.Logger) *cluster {
	return &cluster{
		dir:     filepath.Join(dataDir, "pg"),
		logFile: filepath.Join(dataDir, "pg.log"),
		run:     r,
		log:     log,
	}
}

// ensureRunning initialises the cluster if needed, starts it unless a
// server (one an earlier spine left behind) already runs on it, and returns
// the port it listens on and whether this call started it.
func (c *cluster) ensureRunning(ctx context.Context) (port int, started bool, err error) {
	if !c.initialized() {
		if err := c.initdb(ctx); err != nil {
			return 0, false, err
		}
	}
	running, err := c.status(ctx)
	if err != nil {
		return 0, false, err
	}
	if running {
		port, err := c.port()
		if err != nil {
			return 0, false, err
		}
		c.log.Info("pgboot: reusing running private postgres", "dir", c.dir, "port", port)
		return port, false, nil
	}
	if err := c.removeStalePID(); err != nil {
		return 0, false, err
	}
	port, err = c.start(ctx)
	return port, err == nil, err
}

func (c *cluster) initialized() bool {
	_, err := os.Stat(filepath.Join(c.dir, "PG_VERSION"))
	return err == nil
}

// status asks pg_ctl whether a live postmaster owns the directory.
func (c *cluster) status(ctx context.Context) (bool, error) {
	out, err := c.run.run(ctx, c.dir, "pg_ctl", "status", "-D", c.dir)
	var exitErr *exec.ExitError
	switch {
	case err == nil:
		return true, nil
	case errors.As(err, &exitErr) && exitErr.ExitCode() == statusNotRunning:
		return false, nil
	default:
		return false, fmt.Errorf("pg_ctl status: %w: %s", err, strings.TrimSpace(string(out)))
	}
}

// removeStalePID deletes the postmaster.pid of a server that died without
// cleaning up, which would otherwise stop the next start.
func (c *cluster) removeStalePID() error {
	pidFile := filepath.Join(c.dir, "postmaster.pid")
	err := os.Remove(pidFile)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("remove stale %s: %w", pidFile, err)
	}
	c.log.Warn("pgboot: removed stale postmaster.pid of a crashed server", "dir", c.dir)
	return nil
}

// port reads the listening port from postmaster.pid, whose fourth line it is.
func (c *cluster) port() (int, error) {
	pidFile := filepath.Join(c.dir, "postmaster.pid")
	b, err := os.ReadFile(pidFile)
	if err != nil {
		return 0, fmt.Errorf("read port: %w", err)
	}
	lines := strings.Split(string(b), "\n")
	if len(lines) < 4 {
		return 0, fmt.Errorf("read port: %s has %d lines, want at least 4", pidFile, len(lines))
	}
	port, err := strconv.Atoi(strings.TrimSpace(lines[3]))
	if err != nil {
		return 0, fmt.Errorf("read port from %s: %w", pidFile, err)
	}
	return port, nil
}

// stop shuts the server down, rolling back open transactions.
func (c *cluster) stop(ctx context.Context) error {
	out, err := c.run.run(ctx, c.dir, "pg_ctl", "stop", "-w", "-m", "fast", "-D", c.dir)
	if err != nil {
		return fmt.Errorf("pg_ctl stop: %w: %s", err, strings.TrimSpace(string(out)))
	}
	c.log.Info("pgboot: stopped private postgres", "dir", c.dir)
	return nil
}
