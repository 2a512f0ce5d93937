package node_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/spinehq/spine/internal/config"
	"github.com/spinehq/spine/internal/pgtest"
	"github.com/spinehq/spine/internal/spinetest"
	"github.com/spinehq/spine/node"
	"github.com/spinehq/spine/streams"
)

// A mixed workload — sessions with holes and duplicates, library writes,
// an upload, accounting rows and a plan budget, desktop tasks with a lost
// lease — rebuilt from the log into a fresh database, gives projections
// whose checksums equal the live ones.
func TestRebuildVerifies(t *testing.T) {
	_, url := pgtest.New(t)
	cfg := config.Config{DatabaseURL: url, NATSListen: "127.0.0.1:0", HTTPAddr: "127.0.0.1:0",
		DataDir: t.TempDir(), TokenSecret: secret, Replicas: 1}
	f := &fixture{t: t, commits: make(chan struct{}, 1), cfg: cfg}
	n, err := node.Start(context.Background(), cfg, spinetest.Logger(t), &node.Options{BatchSize: 7,
		OnCommit: func(uint64, []streams.Message) {
			select {
			case f.commits <- struct{}{}:
			default:
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	f.n, f.base = n, "http://"+n.HTTPAddr()
	t.Cleanup(n.Stop)
	alice := f.token("acme", "alice")

	var envs []*streams.Envelope
	for s := 0; s < 5; s++ {
		id := fmt.Sprintf("rb%d", s)
		envs = append(envs, spinetest.Start(id))
		for seq := int64(1); seq <= 12; seq++ {
			switch {
			case seq == 5 && s%2 == 0:
				continue // a hole
			case seq%4 == 0:
				envs = append(envs, spinetest.Write(id, seq, "f.txt", "shared content"))
			case seq%3 == 0:
				envs = append(envs, spinetest.Command(id, seq, "make"))
			default:
				envs = append(envs, spinetest.Text(id, seq, fmt.Sprintf("%s line %d\n", id, seq)))
			}
		}
		dup := spinetest.Text(id, 2, "duplicate")
		dup.ID += "-again"
		envs = append(envs, dup, spinetest.MCP(id, "c1", "search"))
		if s != 4 {
			envs = append(envs, spinetest.End(id, "done", "m", "e"))
		}
	}
	// Running totals: rb4's kept on its row (it never ends), rb0's after its end passed over.
	for _, id := range []string{"rb4", "rb0"} {
		cost := 0.25
		envs = append(envs, &streams.Envelope{V: 1, Type: streams.TypeSessionUsage, ID: id + "-usage", At: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC),
			SessionID: id, Usage: &streams.Usage{InputTokens: 10, OutputTokens: 3}, TotalCost: &cost})
	}
	envs = append(envs, spinetest.Text("rb0", 13, "after the end")) // a dead letter, the caller's
	f.do("POST", "/v1/ingest", alice, envelopes(t, envs...))
	// A trusted producer's dead letter, its session owner's.
	if _, err := n.Publisher.Publish(context.Background(), spinetest.Text("rb1", 14, "late"), nil); err != nil {
		t.Fatal(err)
	}
	// A telemetry session (ted's): a request sent twice, its end, a request after its end.
	// And one of his that ended, then a door started (its end is the row).
	cost := 0.125
	r1 := spinetest.Request("rbt", 1000, "req_1", "claude-opus-4-8", &streams.Usage{InputTokens: 5, OutputTokens: 2}, &cost)
	r1again := *r1
	r1again.ID += "-again"
	telemetryEnd := func(id string) *streams.Envelope {
		return spinetest.Telemetry(id, 2000, "end", &streams.Telemetry{Kind: streams.TelemetryEnd, Source: streams.TelemetryHook})
	}
	for _, e := range []*streams.Envelope{r1, &r1again, telemetryEnd("rbt"),
		spinetest.Request("rbt", 3000, "req_2", "claude-haiku-4-5", &streams.Usage{InputTokens: 1, OutputTokens: 1}, nil),
		spinetest.Request("rbr", 1000, "req_1", "claude-opus-4-8", &streams.Usage{InputTokens: 5, OutputTokens: 2}, &cost),
		telemetryEnd("rbr"), spinetest.Start("rbr"), spinetest.Text("rbr", 1, "again\n"), spinetest.End("rbr", "failed", "m", "")} {
		if e.Owner != nil {
			e.Owner = &streams.Owner{Org: "acme", Member: "ted"}
		}
		if _, err := n.Publisher.Publish(context.Background(), e, nil); err != nil {
			t.Fatal(err)
		}
	}
	f.do("POST", "/v1/library/uploads?name=a.txt", alice, []byte("uploaded bytes"))
	f.do("POST", "/v1/ingest", alice, envelopes(t, spinetest.Disconnect("w1", "gone")))
	desktopTraffic(t, n) // desktop tasks with a lost lease, expiries, cancels
	budget := `{"dollarCeiling":5.00,"loopCap":10}`
	if code, resp := f.do("POST", "/v1/plans/plan-7/budget", f.adminToken("acme", "ada"), []byte(budget)); code >= 300 {
		t.Fatalf("budget = %d %s", code, resp)
	}
	if err := n.WaitIdle(context.Background(), nil); err != nil {
		t.Fatal(err)
	}

	var owned int
	if err := n.Pool.QueryRow(context.Background(), `SELECT count(*) FROM dead_letters WHERE org = 'acme' AND member = 'alice'`).Scan(&owned); err != nil || owned != 2 {
		t.Fatalf("%d dead letters attributed to their owner (%v), want 2", owned, err)
	}
	var reopened string
	if err := n.Pool.QueryRow(context.Background(), `SELECT status FROM router_calls WHERE session_id = 'rbr'`).Scan(&reopened); err != nil ||
		reopened != "failed" {
		t.Fatalf("rbr's row is %q (%v), want its door's end", reopened, err)
	}
	rcfg := cfg
	rcfg.NATSURL = n.NATSURL()
	res, err := node.Rebuild(context.Background(), rcfg, spinetest.Logger(t), node.RebuildOptions{Verify: true})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Verified || len(res.Differ) != 0 {
		for _, tbl := range res.Differ {
			t.Errorf("%s: live %s, rebuilt %s", tbl, res.Live[tbl], res.Rebuilt[tbl])
		}
		t.Fatal("rebuild differs")
	}
	for _, tbl := range []string{"sessions", "session_requests", "steps", "artifacts", "dead_letters", "router_calls", "router_call_requests",
		"cost_days", "plan_budgets", "desktop_tasks", "remote_sessions"} {
		if res.Live[tbl] == "" || res.Live[tbl][:2] == "0:" {
			t.Errorf("%s is empty: the workload did not exercise it (%s)", tbl, res.Live[tbl])
		}
	}
	// A projection that drifted from the log is named.
	if _, err := n.Pool.Exec(context.Background(), `UPDATE sessions SET model = 'tampered' WHERE id = 'rb1'`); err != nil {
		t.Fatal(err)
	}
	res, err = node.Rebuild(context.Background(), rcfg, spinetest.Logger(t), node.RebuildOptions{Verify: true})
	if err != nil || res.Verified || len(res.Differ) != 1 || res.Differ[0] != "sessions" {
		t.Fatalf("tampered live projection: %+v, %v", res, err)
	}
	// The rebuild's consumers are gone; the live ones are untouched.
	stream, err := n.JS.Stream(context.Background(), streams.StreamSessions)
	if err != nil {
		t.Fatal(err)
	}
	names := stream.ConsumerNames(context.Background())
	for name := range names.Name() {
		if len(name) > 8 && name[:8] == "rebuild_" {
			t.Errorf("rebuild left consumer %s", name)
		}
	}
}
