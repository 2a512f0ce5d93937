package faults_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/spinehq/spine/internal/config"
	"github.com/spinehq/spine/internal/pgtest"
	"github.com/spinehq/spine/internal/spinetest"
	"github.com/spinehq/spine/node"
	"github.com/spinehq/spine/streams"
)

// PostgreSQL's connections are killed (pg_terminate_backend) again and
// again in the middle of an ingest: projectors retry, and nothing is lost or
// doubled — the projections equal an uninterrupted replay.
func TestPostgresConnectionsKilledDuringIngest(t *testing.T) {
	_, dbURL := pgtest.New(t)
	cfg := config.Config{DatabaseURL: dbURL, NATSListen: "127.0.0.1:0", HTTPAddr: "127.0.0.1:0",
		DataDir: t.TempDir(), TokenSecret: strings.Repeat("ab", 32)}
	var killed atomic.Int64
	admin, err := pgxConnect(pgtest.AdminURL())
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(context.Background())
	dbName := dbURL[strings.LastIndex(dbURL, "/")+1:]
	if i := strings.Index(dbName, "?"); i >= 0 {
		dbName = dbName[:i]
	}
	kill := func() {
		var n int
		err := admin.QueryRow(context.Background(), `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
			WHERE datname = $1 AND pid <> pg_backend_pid()`, dbName).Scan(&n)
		if err != nil {
			t.Error(err)
			return
		}
		killed.Add(int64(n))
	}
	var killMu sync.Mutex // one admin connection: one query at a time
	killLocked := func() { killMu.Lock(); defer killMu.Unlock(); kill() }
	var commits atomic.Int64
	var kills sync.WaitGroup
	defer kills.Wait()
	var n *node.Node
	n, err = node.Start(context.Background(), cfg, spinetest.Logger(t), &node.Options{BatchSize: 25,
		OnCommit: func(uint64, []streams.Message) {
			if c := commits.Add(1); c%7 == 0 && c < 70 {
				kills.Go(killLocked) // from outside the projector, as a failover would
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Stop()
	acked := map[string]int64{}
	for s := range 6 {
		id := fmt.Sprintf("pg%d", s)
		if _, err := n.Publisher.PublishAsync(spinetest.Start(id), nil); err != nil {
			t.Fatal(err)
		}
		acked[id] = 0
	}
	for seq := int64(1); seq <= 400; seq++ {
		for s := range 6 {
			id := fmt.Sprintf("pg%d", s)
			e := spinetest.Text(id, seq, fmt.Sprintf("%s %d\n", id, seq))
			if seq%9 == 0 {
				e = spinetest.Write(id, seq, "f.txt", fmt.Sprintf("v%d", seq%4))
			}
			if _, err := n.Publisher.PublishAsync(e, nil); err != nil {
				t.Fatal(err)
			}
			acked[id] = seq
		}
	}
	<-n.JS.PublishAsyncComplete()
	ctx, cancel := context.WithTimeout(context.Background(), spinetest.WaitTimeout)
	defer cancel()
	if err := n.WaitIdle(ctx, nil); err != nil {
		t.Fatal(err)
	}
	waitProjected(t, cfg, acked)
	if killed.Load() == 0 {
		t.Fatal("no connection was killed: the test did not test anything")
	}
	rcfg := cfg
	rcfg.NATSURL = n.NATSURL()
	res, err := node.Rebuild(context.Background(), rcfg, spinetest.Logger(t), node.RebuildOptions{Verify: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, tbl := range res.Differ {
		t.Errorf("%s: with killed connections %s, uninterrupted replay %s", tbl, res.Live[tbl], res.Rebuilt[tbl])
	}
	t.Logf("%d connections killed; projections equal an uninterrupted replay", killed.Load())
}
