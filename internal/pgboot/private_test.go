package pgboot_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/spinehq/spine/internal/pgboot"
)

// TestPrivateClusterLifecycle walks one private cluster through its life:
// created, reused while running, stopped, restarted over a crash's stale
// pid file, and finally refusing to start with a broken configuration.
func TestPrivateClusterLifecycle(t *testing.T) {
	var logs logBuffer
	opts := pgboot.Options{LocalAddr: deadAddr, DataDir: dataDir(t), Logger: newLogger(&logs)}

	first := findPrivate(t, opts)
	execSQL(t, first.URL, "CREATE TABLE marker (id int)")
	if !strings.Contains(logs.String(), "initdb") {
		t.Fatalf("first run did not initialise a cluster; logs:\n%s", logs.String())
	}

	logs.Reset()
	again := findPrivate(t, opts)
	if again.URL != first.URL || !strings.Contains(logs.String(), "reusing") {
		t.Fatalf("running cluster not reused: %q vs %q; logs:\n%s", again.URL, first.URL, logs.String())
	}

	stopTwice(t, again)
	if _, err := connectOnce(first.URL); err == nil {
		t.Fatal("connected after Stop")
	}

	writeStalePID(t, filepath.Join(opts.DataDir, "pg"))
	logs.Reset()
	restarted := findPrivate(t, opts)
	if strings.Contains(logs.String(), "initdb") || !strings.Contains(logs.String(), "stale") {
		t.Fatalf("restart should skip initdb and remove the stale pid file; logs:\n%s", logs.String())
	}
	queryString(t, restarted.URL, "SELECT count(*)::text FROM marker")
	stopTwice(t, restarted)

	breakConfig(t, filepath.Join(opts.DataDir, "pg"))
	_, err := pgboot.Find(t.Context(), opts)
	if !errors.Is(err, pgboot.ErrNoPostgres) || !strings.Contains(err.Error(), "spine_no_such_setting") {
		t.Fatalf("broken start should wrap ErrNoPostgres and quote the log; got: %v", err)
	}
}

func findPrivate(t *testing.T, opts pgboot.Options) *pgboot.Result {
	t.Helper()
	res, err := pgboot.Find(t.Context(), opts)
	if err != nil {
		t.Fatalf("find: %v", err)
	}
	t.Cleanup(func() { _ = res.Stop() })
	if res.Source != "private" {
		t.Fatalf("source = %q, want private", res.Source)
	}
	if got := queryString(t, res.URL, "SELECT current_database()"); got != "spine" {
		t.Fatalf("connected to %q, want spine", got)
	}
	return res
}

func stopTwice(t *testing.T, res *pgboot.Result) {
	t.Helper()
	if err := res.Stop(); err != nil {
		t.Fatalf("stop: %v", err)
	}
	if err := res.Stop(); err != nil {
		t.Fatalf("second stop: %v", err)
	}
}

func connectOnce(url string) (*pgx.Conn, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, url)
	if err == nil {
		conn.Close(ctx)
	}
	return conn, err
}

// writeStalePID leaves the pid file a crashed postmaster would, naming a
// process that has exited.
func writeStalePID(t *testing.T, dir string) {
	t.Helper()
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatalf("run true: %v", err)
	}
	content := fmt.Sprintf("%d\n%s\n0\n5432\n\n\n\n", cmd.Process.Pid, dir)
	pidFile := filepath.Join(dir, "postmaster.pid")
	if err := os.WriteFile(pidFile, []byte(content), 0o600); err != nil {
		t.Fatalf("write stale pid: %v", err)
	}
	// The server's user wrote the real one; so must we, when we are root.
	fi, err := os.Stat(dir)
	if err != nil {
		t.Fatalf("stat data dir: %v", err)
	}
	st := fi.Sys().(*syscall.Stat_t)
	if err := os.Chown(pidFile, int(st.Uid), int(st.Gid)); err != nil {
		t.Fatalf("chown stale pid: %v", err)
	}
}

func breakConfig(t *testing.T, dir string) {
	t.Helper()
	f, err := os.OpenFile(filepath.Join(dir, "postgresql.conf"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatalf("open config: %v", err)
	}
	defer f.Close()
	if _, err := f.WriteString("\nspine_no_such_setting = 1\n"); err != nil {
		t.Fatalf("break config: %v", err)
	}
}

func TestPrivateClusterNeedsReachableDirWhenRoot(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("only root hands the cluster to the postgres OS user")
	}
	closed := t.TempDir() // it and its parent are 0700, root's
	_, err := pgboot.Find(t.Context(), pgboot.Options{LocalAddr: deadAddr, DataDir: closed + "/data"})
	if !errors.Is(err, pgboot.ErrNoPostgres) || !strings.Contains(err.Error(), "chmod o+x "+filepath.Dir(closed)) {
		t.Fatalf("want advice to open up %s, got: %v", filepath.Dir(closed), err)
	}
}
