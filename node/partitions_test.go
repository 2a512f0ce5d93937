package node_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spinehq/spine/internal/config"
	"github.com/spinehq/spine/internal/pgtest"
	"github.com/spinehq/spine/internal/spinetest"
	"github.com/spinehq/spine/node"
	"github.com/spinehq/spine/streams"
)

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(spinetest.WaitTimeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond) // partitions move on the managers' own ticks
	}
}

// Two instances share the recorder's work by partitions of session ids;
// when one stops, the other takes its partitions over; every session is
// recorded whole and in order, and the projections equal a replay.
func TestPartitionsShareAndTakeOver(t *testing.T) {
	natsToken := strings.Repeat("7a", 32) // a shared NATS's own token, given to each node as SPINE_NATS_TOKEN
	emb, err := streams.StartEmbedded(streams.EmbeddedConfig{StoreDir: t.TempDir(), Listen: "127.0.0.1:0", Token: natsToken})
	if err != nil {
		t.Fatal(err)
	}
	defer emb.Stop()
	_, dbURL := pgtest.New(t)
	cfg := func() config.Config {
		return config.Config{DatabaseURL: dbURL, NATSURL: emb.ClientURL(), NATSToken: natsToken, HTTPAddr: "127.0.0.1:0",
			DataDir: t.TempDir(), TokenSecret: secret, Replicas: 1, Partitions: 4}
	}
	a, err := node.Start(context.Background(), cfg(), spinetest.Logger(t), &node.Options{BatchSize: 20})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Stop()
	waitFor(t, "a to lead all four", func() bool { return len(a.LeadingPartitions()) == 4 })
	b, err := node.Start(context.Background(), cfg(), spinetest.Logger(t), &node.Options{BatchSize: 20})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Stop()
	waitFor(t, "two partitions each", func() bool {
		la, lb := a.LeadingPartitions(), b.LeadingPartitions()
		return len(la) == 2 && len(lb) == 2 && !slices.ContainsFunc(la, func(k int) bool { return slices.Contains(lb, k) })
	})

	publish := func(n *node.Node, round int) {
		for s := range 12 {
			id := fmt.Sprintf("r%d-s%d", round, s)
			envs := []*streams.Envelope{spinetest.Start(id)}
			for seq := int64(1); seq <= 20; seq++ {
				envs = append(envs, spinetest.Text(id, seq, fmt.Sprintf("%s %d\n", id, seq)))
			}
			if s%3 != 0 {
				envs = append(envs, spinetest.End(id, "done", "m", ""))
			}
			for _, e := range envs {
				if _, err := n.Publisher.PublishAsync(e, nil); err != nil {
					t.Fatal(err)
				}
			}
		}
		<-n.JS.PublishAsyncComplete()
	}
	recorded := func(want int) func() bool {
		return func() bool {
			var n int
			a := a
			if a == nil {
				a = b
			}
			b.Pool.QueryRow(context.Background(), `SELECT count(*) FROM sessions WHERE last_seq = 20`).Scan(&n)
			return n == want
		}
	}
	publish(a, 1)
	d := spinetest.Disconnect("w1", "laptop closed")
	if _, err := a.Publisher.Publish(context.Background(), d, nil); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "round 1 recorded", recorded(12))
	waitFor(t, "the disconnect to end every live session", func() bool {
		var live int
		b.Pool.QueryRow(context.Background(), `SELECT count(*) FROM sessions WHERE ended_at IS NULL`).Scan(&live)
		return live == 0
	})
	var parts int
	b.Pool.QueryRow(context.Background(), `SELECT count(DISTINCT partition) FROM sessions`).Scan(&parts)
	if parts < 2 {
		t.Fatalf("sessions landed in %d partitions", parts)
	}

	a.Stop()
	a = nil
	waitFor(t, "b to take all four over", func() bool { return len(b.LeadingPartitions()) == 4 })
	publish(b, 2)
	waitFor(t, "round 2 recorded", recorded(24))

	var holes, dead int
	b.Pool.QueryRow(context.Background(), `SELECT coalesce(sum(dropped_actions), 0) FROM sessions`).Scan(&holes)
	b.Pool.QueryRow(context.Background(), `SELECT count(*) FROM dead_letters`).Scan(&dead)
	if holes != 0 || dead != 0 {
		t.Fatalf("%d holes, %d dead letters", holes, dead)
	}
	if err := b.WaitIdle(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	res, err := node.Rebuild(context.Background(), cfg(), spinetest.Logger(t), node.RebuildOptions{Verify: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, tbl := range res.Differ {
		t.Errorf("%s: shared %s, replay %s", tbl, res.Live[tbl], res.Rebuilt[tbl])
	}
	if !strings.HasPrefix(res.Live["sessions"], "24:") {
		t.Fatalf("sessions = %s", res.Live["sessions"])
	}
}
