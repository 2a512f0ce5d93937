package pgtest

import (
	"context"
	"os"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/spinehq/spine/internal/pgboot"
)

// TestSharedPrivateCluster has two finders race for a private cluster that
// does not exist yet, as parallel test processes would: the file lock lets
// one create it and the other reuse it.
func TestSharedPrivateCluster(t *testing.T) {
	const deadAddr = "127.0.0.1:1"
	root, err := os.MkdirTemp("", "pgtest-shared-")
	if err != nil {
		t.Fatalf("temp dir: %v", err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	if err := os.Chmod(root, 0o755); err != nil {
		t.Fatalf("chmod: %v", err)
	}
	dir := root + "/cluster"
	t.Cleanup(func() { stopShared(t, dir, deadAddr) })

	var wg sync.WaitGroup
	urls := make([]string, 2)
	errs := make([]error, 2)
	for i := range urls {
		wg.Go(func() { urls[i], errs[i] = findShared(t.Context(), dir, deadAddr) })
	}
	wg.Wait()
	for i := range urls {
		if errs[i] != nil {
			t.Fatalf("finder %d: %v", i, errs[i])
		}
	}
	if urls[0] != urls[1] {
		t.Fatalf("finders got different servers: %s and %s", urls[0], urls[1])
	}
	conn, err := pgx.Connect(t.Context(), urls[0])
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	conn.Close(context.Background())
}

// stopShared stops the cluster the test started; outside tests nobody does.
func stopShared(t *testing.T, dir, localAddr string) {
	res, err := pgboot.Find(context.Background(), pgboot.Options{DataDir: dir, LocalAddr: localAddr, Database: "postgres"})
	if err != nil {
		t.Errorf("find cluster to stop: %v", err)
		return
	}
	if err := res.Stop(); err != nil {
		t.Errorf("stop cluster: %v", err)
	}
}
