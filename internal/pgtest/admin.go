package pgtest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"syscall"

	"github.com/spinehq/spine/internal/pgboot"
)

// findAdmin returns the URL of a database to run CREATE DATABASE from.
func findAdmin(ctx context.Context) (string, error) {
	if u := os.Getenv(EnvAdminURL); u != "" {
		if _, err := pgboot.WithDatabase(u, "postgres"); err != nil {
			return "", fmt.Errorf("%s: %w", EnvAdminURL, err)
		}
		return u, nil
	}
	dir := filepath.Join(os.TempDir(), fmt.Sprintf("spine-test-pg-%d", os.Getuid()))
	return findShared(ctx, dir, "")
}

// findShared finds a server on localAddr ("" = pgboot's default) or starts
// the private cluster in dir that all test processes share, and leaves it
// running for the next run.
func findShared(ctx context.Context, dir, localAddr string) (string, error) {
	if err := makeReachable(dir); err != nil {
		return "", err
	}
	unlock, err := lockFile(dir + ".lock")
	if err != nil {
		return "", err
	}
	defer unlock()
	res, err := pgboot.Find(ctx, pgboot.Options{
		DataDir:   dir,
		Database:  "postgres",
		LocalAddr: localAddr,
	})
	if err != nil {
		return "", fmt.Errorf("find postgres for tests (or set %s): %w", EnvAdminURL, err)
	}
	return res.URL, nil
}

// makeReachable creates dir so that the postgres OS user, which runs the
// cluster when we are root, can enter it.
func makeReachable(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		return fmt.Errorf("chmod %s: %w", dir, err)
	}
	return nil
}

// lockFile blocks until this process holds an exclusive lock on path. The
// kernel releases it if the process dies.
func lockFile(path string) (unlock func(), err error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open lock %s: %w", path, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	return func() { f.Close() }, nil
}
