package node_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/spinehq/spine/desktop"
	"github.com/spinehq/spine/internal/config"
	"github.com/spinehq/spine/internal/pgtest"
	"github.com/spinehq/spine/internal/spinetest"
	"github.com/spinehq/spine/node"
	"github.com/spinehq/spine/streams"
)

// Desktop traffic — tasks queued, claimed, heartbeats, events (with a
// duplicate and a NUL), sessions linked (and a link refused), a completion, a lost lease, an expiry, a machine
// gone, a cancel and a cancel request, a refused claim — rebuilt from the
// log gives the same desktop projections.
func TestDesktopRebuildVerifies(t *testing.T) {
	ctx := context.Background()
	_, url := pgtest.New(t)
	cfg := config.Config{DatabaseURL: url, NATSListen: "127.0.0.1:0", HTTPAddr: "127.0.0.1:0",
		DataDir: t.TempDir(), TokenSecret: secret, Replicas: 1}
	n, err := node.Start(ctx, cfg, spinetest.Logger(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(n.Stop)
	desktopTraffic(t, n)
	if err := n.WaitIdle(ctx, nil); err != nil {
		t.Fatal(err)
	}
	rcfg := cfg
	rcfg.NATSURL = n.NATSURL()
	rb, err := node.Rebuild(ctx, rcfg, spinetest.Logger(t), node.RebuildOptions{Verify: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, tbl := range rb.Differ {
		t.Errorf("%s: live %s, rebuilt %s", tbl, rb.Live[tbl], rb.Rebuilt[tbl])
	}
	for _, tbl := range []string{"desktop_tasks", "desktop_task_events", "desktop_task_sessions", "desktop_runners", "remote_sessions"} {
		if strings.HasPrefix(rb.Live[tbl], "0:") || rb.Live[tbl] == "" {
			t.Errorf("%s is empty: the workload did not exercise it (%s)", tbl, rb.Live[tbl])
		}
	}
	if !rb.Verified || len(rb.Differ) != 0 {
		t.Fatal("rebuild differs")
	}
}

// desktopTraffic drives every desktop transition through n's service.
func desktopTraffic(t *testing.T, n *node.Node) {
	ctx := context.Background()
	var err error
	svc := n.Desktop
	alice := streams.Owner{Org: "acme", Member: "alice"}
	laptop := runnerOf(t, svc, alice, "laptop", "alice\x00laptop")
	studio := runnerOf(t, svc, alice, "studio", "studio")
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	create := func(req desktop.CreateRequest) *desktop.Session {
		t.Helper()
		req.Target = desktop.TargetDesktop
		sess, err := svc.Create(ctx, alice, req)
		must(err)
		return sess
	}
	claim := func(id desktop.RunnerIdentity, taskID string) *desktop.Claim {
		t.Helper()
		c, err := svc.Claim(ctx, id, taskID)
		must(err)
		return c
	}
	events := func(id desktop.RunnerIdentity, c *desktop.Claim, evs ...desktop.RunnerEvent) {
		t.Helper()
		_, err := svc.PostEvents(ctx, id, c.Task.ID, c.Fence, evs)
		must(err)
	}

	// Done: claimed, heartbeats, events with a duplicate, complete.
	done := create(desktop.CreateRequest{Title: "build", Instructions: "run make\x00test", RunnerID: "laptop"})
	c := claim(laptop, done.LatestTaskID)
	if _, err := svc.Claim(ctx, studio, done.LatestTaskID); err == nil {
		t.Fatal("a second claim won")
	}
	_, err = svc.Heartbeat(ctx, laptop, c.Task.ID, c.Fence)
	must(err)
	events(laptop, c, desktop.RunnerEvent{Seq: 1, Type: desktop.EventSessionID, SessionID: "0b0a5d1e-7c1f-4a59-9d5e-2f6f1d2c3b41"},
		desktop.RunnerEvent{Seq: 2, Type: desktop.EventAssistantText, Text: "ok"})
	events(laptop, c, desktop.RunnerEvent{Seq: 2, Type: desktop.EventAssistantText, Text: "ok"},
		desktop.RunnerEvent{Seq: 3, Type: desktop.EventUsage, Usage: []byte(`{"inputTokens":7}`)})
	// Two sessions linked to it (one linked twice: a retried start); another
	// runner's link of it refused.
	must(svc.LinkSession(ctx, laptop, c.Task.ID, "rec-1"))
	must(svc.LinkSession(ctx, laptop, c.Task.ID, "rec-2"))
	must(svc.LinkSession(ctx, laptop, c.Task.ID, "rec-1"))
	if err := svc.LinkSession(ctx, studio, c.Task.ID, "rec-3"); err == nil {
		t.Fatal("a runner linked a session to a task it does not hold")
	}
	_, err = svc.Complete(ctx, laptop, c.Task.ID, c.Fence, desktop.Completion{Status: desktop.StateDone})
	must(err)
	// A follow-up that loses its lease: interrupted, its events kept.
	send, err := svc.Send(ctx, alice, done.ID, "now push")
	must(err)
	lost := claim(laptop, send.MessageID)
	events(laptop, lost, desktop.RunnerEvent{Seq: 1, Type: desktop.EventAssistantText, Text: "halfway"})
	// Cancelled while queued; cancel requested while running, then completed as cancelled.
	queued := create(desktop.CreateRequest{Instructions: "never mind"})
	_, err = svc.Cancel(ctx, alice, queued.ID)
	must(err)
	running := create(desktop.CreateRequest{Instructions: "stop me", RunnerID: "studio"})
	rc := claim(studio, running.LatestTaskID)
	_, err = svc.Cancel(ctx, alice, running.ID)
	must(err)
	_, err = svc.Complete(ctx, studio, rc.Task.ID, rc.Fence, desktop.Completion{Status: desktop.StateCancelled})
	must(err)
	// Refused (it asks for a workspace the runner does not allow) and failed.
	refused := create(desktop.CreateRequest{Instructions: "rm -rf", RunnerID: "studio", App: desktop.AppCodex, Workspace: "/etc"})
	fc := claim(studio, refused.LatestTaskID)
	_, err = svc.Complete(ctx, studio, fc.Task.ID, fc.Fence, desktop.Completion{Status: desktop.StateRefused,
		Error: "workspace_not_allowed: /etc"})
	must(err)
	failed := create(desktop.CreateRequest{Instructions: "crash", RunnerID: "studio"})
	fc = claim(studio, failed.LatestTaskID)
	_, err = svc.Complete(ctx, studio, fc.Task.ID, fc.Fence, desktop.Completion{Status: desktop.StateFailed, Error: "app_failed: exit 1"})
	must(err)
	// Expired past deliverBy; expired because its machine left.
	late := create(desktop.CreateRequest{Instructions: "whenever", RunnerID: "studio", DeliverBy: ptr(time.Now().Add(time.Minute))})
	gone := create(desktop.CreateRequest{Instructions: "right now", RunnerID: "laptop"})
	res, err := svc.Sweep(ctx, time.Now().Add(desktop.PresenceWindow+time.Minute))
	if err != nil || res.Interrupted != 1 || res.Expired != 1 || res.RunnerGone != 1 {
		t.Fatalf("sweep = %+v, %v", res, err)
	}
	for sess, want := range map[string]string{done.ID: desktop.StateInterrupted, queued.ID: desktop.StateCancelled,
		running.ID: desktop.StateCancelled, late.ID: desktop.StateExpired, gone.ID: desktop.StateExpired} {
		s, err := svc.Session(ctx, alice, sess)
		if err != nil || s.State != want {
			t.Fatalf("session %s = %+v, %v; want %s", sess, s, err, want)
		}
	}
}

// runnerOf mints a token for one of owner's machines and registers it.
func runnerOf(t *testing.T, svc *desktop.Service, owner streams.Owner, runnerID, machine string) desktop.RunnerIdentity {
	t.Helper()
	ctx := context.Background()
	tok, err := svc.MintRunnerToken(ctx, owner, runnerID)
	if err != nil {
		t.Fatal(err)
	}
	id, err := svc.VerifyRunner(ctx, tok.Token)
	if err != nil {
		t.Fatal(err)
	}
	inv := desktop.Inventory{Machine: machine, Apps: []string{"claude-code"}, Capabilities: []string{desktop.KindRemoteSession},
		ProtocolVersion: 1, ExecutionTargets: []string{desktop.TargetDesktop}}
	if _, err := svc.Register(ctx, id, inv); err != nil {
		t.Fatal(err)
	}
	return id
}

func ptr[T any](v T) *T { return &v }
