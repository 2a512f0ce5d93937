package main

import (
	"context"
	"strings"
	"testing"

	"github.com/spinehq/spine/internal/config"
	"github.com/spinehq/spine/internal/pgtest"
	"github.com/spinehq/spine/internal/spinetest"
	"github.com/spinehq/spine/node"
)

// testNode starts a node on a fresh database, points the CLI at it with a
// dev token (SPINE_URL, SPINE_TOKEN), and returns it with a function that
// waits until every projector has applied everything published.
func testNode(t *testing.T) (*node.Node, func()) {
	return testNodeWith(t, func(*config.Config) {})
}

// testNodeWith is testNode with a configuration set changes.
func testNodeWith(t *testing.T, set func(*config.Config)) (*node.Node, func()) {
	t.Helper()
	_, url := pgtest.New(t)
	cfg := config.Config{DatabaseURL: url, NATSListen: "off",
		HTTPAddr: "127.0.0.1:0", DataDir: t.TempDir(), TokenSecret: strings.Repeat("ab", 32)}
	set(&cfg)
	n, err := node.Start(context.Background(), cfg, spinetest.Logger(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(n.Stop)
	tok, _ := n.DevToken()
	t.Setenv(config.EnvURL, "http://"+n.HTTPAddr())
	t.Setenv(config.EnvToken, tok)
	t.Setenv(config.EnvSpoolDir, t.TempDir()) // spine run's spool: never the user's
	return n, func() {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), spinetest.WaitTimeout)
		defer cancel()
		if err := n.WaitIdle(ctx, nil); err != nil {
			t.Fatalf("not caught up: %v", err)
		}
	}
}
