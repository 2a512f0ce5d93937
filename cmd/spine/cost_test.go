package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/spinehq/spine/accounting"
	"github.com/spinehq/spine/auth"
	"github.com/spinehq/spine/internal/config"
	"github.com/spinehq/spine/internal/pgtest"
	"github.com/spinehq/spine/internal/spinetest"
	"github.com/spinehq/spine/node"
	"github.com/spinehq/spine/streams"
)

// costNode is a node running only the accounting projector, fed the mixed
// fixture plus plan p9, whose one metered call (on no named machine)
// reported usage but no cost against a $5 ceiling. SPINE_URL and SPINE_TOKEN (acme/alice, an org
// admin: the reports below are the org's) point at it.
func costNode(t *testing.T) *node.Node {
	t.Helper()
	ctx := context.Background()
	_, url := pgtest.New(t)
	n, err := node.Start(ctx, config.Config{DatabaseURL: url, NATSListen: "off", HTTPAddr: "127.0.0.1:0",
		DataDir: t.TempDir(), TokenSecret: strings.Repeat("ab", 32)}, spinetest.Logger(t), &node.Options{NoProjectors: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(n.Stop)
	commits := make(chan struct{}, 1)
	p, err := n.StartProjector(ctx, streams.ProjectorConfig{Name: accounting.ProjectorName, Stream: streams.StreamSessions,
		Filter: accounting.Subjects(), Handler: accounting.New(accounting.Config{}),
		OnCommit: func(uint64, []streams.Message) {
			select {
			case commits <- struct{}{}:
			default:
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	envs := spinetest.ReadEnvelopes(t, "../../testdata/accounting/mixed.jsonl")
	start, end := spinetest.Start("cli-9"), spinetest.End("cli-9", "done", "claude-sonnet-4-5", "")
	start.PlanID, start.WorkerID, end.Billing = "p9", "", "metered"
	end.Usage = &streams.Usage{InputTokens: 40, OutputTokens: 2}
	var last uint64
	for _, e := range append(envs, start, end) {
		ack, err := n.Publisher.Publish(ctx, e, nil)
		if err != nil {
			t.Fatal(err)
		}
		last = ack.Sequence
	}
	ceiling := accounting.Dollars("5")
	ack, err := accounting.PublishBudget(ctx, n.JS, &accounting.Budget{V: 1, Type: accounting.TypePlanBudget, ID: "b9",
		At: spinetest.T0, PlanID: "p9", Org: "acme", Member: "alice", DollarCeiling: &ceiling})
	if err != nil {
		t.Fatal(err)
	}
	last = ack.Sequence
	deadline := time.After(spinetest.WaitTimeout)
	for p.Checkpoint() < last {
		select {
		case <-commits:
		case <-deadline:
			t.Fatalf("accounting at %d, want %d", p.Checkpoint(), last)
		}
	}
	tok, err := n.Signer.Mint(auth.Claims{Org: "acme", Member: "alice", Role: auth.RoleAdmin}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv(config.EnvURL, "http://"+n.HTTPAddr())
	t.Setenv(config.EnvToken, tok)
	return n
}

// A member's spine cost plan says whose calls it counts and shows no
// budget: the plan's standing counts everyone's calls.
func TestCostPlanAsMember(t *testing.T) {
	n := costNode(t)
	tok, err := n.Signer.Mint(auth.Claims{Org: "acme", Member: "bob"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv(config.EnvToken, tok)
	out, err := capture(t, "cost", "plan", "p1")
	want := `plan      p1 (org acme)
calls     1 (metered 1, subscription 0, unknown 0)
tokens    metered 800, subscription 0, unknown 0
dollars   metered not reported, subscription -, unknown - (as reported)
member    bob's calls only; the plan's budget is shown to org admins
`
	if err != nil || out != want {
		t.Errorf("bob's spine cost plan p1 = %v\n%s\nwant:\n%s", err, out, want)
	}
}

// spine cost prints tables that keep silence visible: a cell nobody
// reported says "not reported", a partly reported one "(n/m)", never $0.
func TestCostCommand(t *testing.T) {
	costNode(t)
	out, err := capture(t, "cost", "--from", "2026-11-01", "--to", "2026-11-30", "--group-by", "plan")
	if err != nil {
		t.Fatal(err)
	}
	want := `org acme, calls that ended 2026-11-01 00:00 to 2026-12-01 00:00, by plan

       plan  metered calls  tokens    reported $  subscription calls  tokens  reported $  unknown calls        tokens    reported $
  (no plan)              0       -             -                   1       5           0              1  not reported  not reported
         p1              3    3650    1.00 (2/3)                   1      15        0.05              0             -             -
         p2              0       -             -                   0       -           -              2     150 (1/2)     1.5 (1/2)
         p9              1      42  not reported                   0       -           -              0             -             -
      total              4    3692    1.00 (2/4)                   2      20        0.05              3     150 (1/3)     1.5 (1/3)

"not reported": no app reported it (unknown, not $0); "(n/m)": n of m calls reported.
`
	if out != want {
		t.Errorf("spine cost:\n%s\nwant:\n%s", out, want)
	}

	// Flags may follow the subcommand; the plan is never silently dropped.
	for _, args := range [][]string{{"cost", "--json", "plan", "p9"}, {"cost", "plan", "p9", "--json"}} {
		out, err := capture(t, args...)
		var p accounting.PlanSpend
		if err != nil || json.Unmarshal([]byte(out), &p) != nil || p.PlanID != "p9" || p.Ceiling.Spent != nil {
			t.Errorf("spine %v = %v\n%s", args, err, out)
		}
	}
	out, err = capture(t, "cost", "plan", "p9")
	if err != nil {
		t.Fatal(err)
	}
	want = `plan      p9 (org acme)
calls     1 (metered 1, subscription 0, unknown 0)
tokens    metered 42, subscription 0, unknown 0
dollars   metered not reported, subscription -, unknown - (as reported)
ceiling   not reported of 5 metered, left and reached unknown (no cost reported for any of the plan's 1 metered call)
loop cap  none
`
	if out != want {
		t.Errorf("spine cost plan p9:\n%s\nwant:\n%s", out, want)
	}
	out, err = capture(t, "cost", "plan", "p1")
	if err != nil || !strings.Contains(out, "dollars   metered 1.00 (2/3), subscription 0.05, unknown - (as reported)\nceiling   none\n") {
		t.Errorf("spine cost plan p1 = %v\n%s", err, out)
	}

	// Pages: --limit rows, then --after the key the page names.
	out, err = capture(t, "cost", "--from", "2026-11-01", "--to", "2026-11-30", "--group-by", "plan", "--limit", "2")
	if err != nil || !strings.Contains(out, "\n         p1  ") || strings.Contains(out, " p2 ") ||
		!strings.Contains(out, "\n      total              4    3692") || !strings.HasSuffix(out, "more rows follow: --after \"p1\" (the total covers every page)\n") {
		t.Errorf("spine cost --limit 2 = %v\n%s", err, out)
	}
	out, err = capture(t, "cost", "--from", "2026-11-01", "--to", "2026-11-30", "--group-by", "plan", "--limit", "2", "--after", "p1", "--json")
	var page accounting.Summary
	if err != nil || json.Unmarshal([]byte(out), &page) != nil || len(page.Rows) != 2 || page.Rows[0].Key != "p2" || page.Next != nil {
		t.Errorf("spine cost --after p1 = %v\n%s", err, out)
	}
	if _, err := capture(t, "cost", "--limit", "0"); err == nil || !strings.Contains(err.Error(), "limit") {
		t.Errorf("spine cost --limit 0 = %v, want the server's 400", err)
	}

	for _, args := range [][]string{{"cost", "p1"}, {"cost", "plan"}, {"cost", "--json", "plan"}, {"cost", "plan", "p1", "p2"},
		{"cost", "plan", "p1", "--group-by", "app"}, {"cost", "plan", "p1", "--limit", "5"}, {"cost", "--nope"}} {
		if _, err := capture(t, args...); exitCode(err) != 2 {
			t.Errorf("spine %v = %v, want a usage error", args, err)
		}
	}
}

// spine cost --group-by machine: a row per machine the calls ran on, the
// calls whose start named none as "(none)", and the same total as every
// other grouping.
func TestCostByMachine(t *testing.T) {
	costNode(t)
	out, err := capture(t, "cost", "--from", "2026-11-01", "--to", "2026-11-30", "--group-by", "machine")
	if err != nil {
		t.Fatal(err)
	}
	want := `org acme, calls that ended 2026-11-01 00:00 to 2026-12-01 00:00, by machine

  machine  metered calls  tokens    reported $  subscription calls  tokens  reported $  unknown calls        tokens    reported $
   (none)              1      42  not reported                   0       -           -              0             -             -
       w1              2    2850          1.00                   1      15        0.05              1           150           1.5
       w2              1     800  not reported                   1       5           0              1  not reported  not reported
       w3              0       -             -                   0       -           -              1  not reported  not reported
    total              4    3692    1.00 (2/4)                   2      20        0.05              3     150 (1/3)     1.5 (1/3)

"not reported": no app reported it (unknown, not $0); "(n/m)": n of m calls reported.
`
	if out != want {
		t.Errorf("spine cost --group-by machine:\n%s\nwant:\n%s", out, want)
	}
}
