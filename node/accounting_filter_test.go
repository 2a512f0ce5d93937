package node_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/spinehq/spine/accounting"
	"github.com/spinehq/spine/internal/spinetest"
	"github.com/spinehq/spine/streams"
)

// The accounting projector reads the session stream but takes no chunks:
// its consumer filters them out at the server, so nats-server never sends
// it one (each chunk was delivered to it, only to be passed over), and it
// still counts the session, caught up.
func TestAccountingIsSentNoChunks(t *testing.T) {
	f := newFixture(t)
	alice := f.token("acme", "alice")
	start := spinetest.Start("s1")
	start.Owner = nil
	envs := []*streams.Envelope{start}
	for seq := int64(1); seq <= 20; seq++ {
		envs = append(envs, spinetest.Text("s1", seq, "a line\n"))
	}
	end := spinetest.End("s1", "done", "claude-sonnet-4-5", "")
	end.Usage = &streams.Usage{InputTokens: 10, OutputTokens: 5}
	if code, body := f.do("POST", "/v1/ingest", alice, envelopes(t, append(envs, end)...)); code != http.StatusAccepted && code != http.StatusMultiStatus {
		t.Fatalf("ingest = %d %s", code, body)
	}
	f.waitCaughtUp()
	c, err := f.n.JS.Consumer(context.Background(), streams.StreamSessions, accounting.ProjectorName)
	if err != nil {
		t.Fatal(err)
	}
	info, err := c.Info(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if info.Delivered.Consumer != 2 || info.NumPending != 0 {
		t.Fatalf("accounting was delivered %d messages (%d pending), want the start and the end", info.Delivered.Consumer, info.NumPending)
	}
	var calls int
	if err := f.n.Pool.QueryRow(context.Background(), `SELECT count(*) FROM router_calls WHERE session_id = 's1'`).Scan(&calls); err != nil || calls != 1 {
		t.Fatalf("%d router calls (%v), want 1", calls, err)
	}
}
