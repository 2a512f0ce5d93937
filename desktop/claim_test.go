package desktop_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/spinehq/spine/desktop"
	"github.com/spinehq/spine/streams"
)

// 100 claims race for one task from five runners: exactly one runner wins,
// every claim of the others gets a clean already_claimed, the winner's
// every claim is its one claim (one fence), and the log holds one claim.
func TestHundredRacingClaims(t *testing.T) {
	e := newEnv(t)
	alice := e.member("acme", "alice")
	// Nobody is present yet: deliverBy queues the task for any of alice's runners.
	sess := e.create(alice, map[string]any{"target": "desktop", "instructions": "race", "deliverBy": time.Now().Add(time.Hour)})
	var runners []*fakeRunner
	for i := range 5 {
		runners = append(runners, e.runner(alice, fmt.Sprintf("r%d", i), fmt.Sprintf("machine-%d", i)))
	}
	type result struct {
		runner int
		code   int
		body   string
	}
	results := make(chan result, 100)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range 100 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			code, body := runners[i%5].post(sess.LatestTaskID, "claim", nil)
			results <- result{i % 5, code, string(body)}
		}()
	}
	close(start)
	wg.Wait()
	close(results)
	winners, fences := map[int]int{}, map[uint64]bool{}
	lost := 0
	for r := range results {
		switch {
		case r.code == 200:
			winners[r.runner]++
			fences[decode[desktop.Claim](t, []byte(r.body)).Fence] = true
		case r.code == 409 && strings.Contains(r.body, `"code":"already_claimed"`):
			lost++
		default:
			t.Errorf("claim = %d %s", r.code, r.body)
		}
	}
	// A claim of the winner's that read the task queued and lost the race
	// to its own win reads it again and gets that win; one that came after
	// gets it too. So the winner's 20 all win, with one fence.
	if len(winners) != 1 || len(fences) != 1 || lost != 80 {
		t.Fatalf("winning runners %v (fences %v), already_claimed %d; want one runner with 20, one fence, and 80", winners, fences, lost)
	}
	if n := countOnSubject(t, e, "spine.task."+sess.LatestTaskID+".claimed"); n != 1 {
		t.Fatalf("%d claims in the log, want 1", n)
	}
}

// A claim asked again by the runner that holds the task (its first answer
// lost on the way) is its claim: the same fence and lease, nothing
// published; another runner still gets already_claimed, and once the lease
// ran out the holder's claim is refused too.
func TestClaimAgainByTheHolder(t *testing.T) {
	e := newEnv(t)
	alice := e.member("acme", "alice")
	r := e.runner(alice, "laptop", "laptop")
	other := e.runner(alice, "desk", "desk")
	sess := e.create(alice, map[string]any{"target": "desktop", "instructions": "once", "runnerId": "laptop"})
	c := r.claim(sess.LatestTaskID)
	again := r.claim(sess.LatestTaskID)
	if again.Fence != c.Fence || !again.LeaseExpiresAt.Equal(c.LeaseExpiresAt) || again.Task.ID != c.Task.ID {
		t.Fatalf("claim again = fence %d lease %v; want the first's, %d %v", again.Fence, again.LeaseExpiresAt, c.Fence, c.LeaseExpiresAt)
	}
	r.heartbeat(c.Task.ID, c.Fence) // running now: still the holder's claim
	if again := r.claim(sess.LatestTaskID); again.Fence != c.Fence {
		t.Fatalf("claim of a running task again = fence %d, want %d", again.Fence, c.Fence)
	}
	if n := countOnSubject(t, e, "spine.task."+sess.LatestTaskID+".claimed"); n != 1 {
		t.Fatalf("%d claims in the log, want 1", n)
	}
	if code, body := other.post(sess.LatestTaskID, "claim", nil); code != 409 && code != 403 {
		t.Fatalf("another runner's claim = %d %s, want refused", code, body)
	}
	e.clock.Advance(desktop.LeaseTTL + time.Second)
	if code, body := r.post(sess.LatestTaskID, "claim", nil); code != 409 {
		t.Fatalf("claim after the lease ran out = %d %s, want 409", code, body)
	}
}

// countOnSubject counts the messages stored on one subject.
func countOnSubject(t *testing.T, e *env, subject string) uint64 {
	t.Helper()
	s, err := e.h.JS.Stream(context.Background(), streams.StreamTasks)
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(context.Background(), jetstream.WithSubjectFilter(subject))
	if err != nil {
		t.Fatal(err)
	}
	return info.State.Subjects[subject]
}

// A lost lease (no heartbeat for 60 s) interrupts the task; what the runner
// posted is kept, and the stale claim can no longer heartbeat, post or complete.
func TestLeaseLossInterruptsAndKeepsEvents(t *testing.T) {
	e := newEnv(t)
	alice := e.member("acme", "alice")
	r := e.runner(alice, "laptop", "laptop")
	sess := e.create(alice, map[string]any{"target": "desktop", "instructions": "long job"})
	c := r.claim(sess.LatestTaskID)
	r.heartbeat(c.Task.ID, c.Fence)
	code, body := r.post(c.Task.ID, "events", map[string]any{"fence": c.Fence,
		"events": []desktop.RunnerEvent{{Seq: 1, Type: desktop.EventAssistantText, Text: "halfway there"}}})
	if code != 200 {
		t.Fatalf("events = %d %s", code, body)
	}
	// 59 s on, the lease holds; 61 s on, it is lost.
	if res, err := e.svc.Sweep(context.Background(), time.Now().Add(59*time.Second)); err != nil || res.Interrupted != 0 {
		t.Fatalf("sweep at 59s = %+v, %v", res, err)
	}
	if res, err := e.svc.Sweep(context.Background(), time.Now().Add(61*time.Second)); err != nil || res.Interrupted != 1 {
		t.Fatalf("sweep at 61s = %+v, %v", res, err)
	}
	res := e.read(alice, sess.ID, "0")
	if res.Session.State != desktop.StateInterrupted || !strings.Contains(res.Session.Error, "lease_lost") ||
		len(res.Entries) != 3 || res.Entries[1].Text != "halfway there" || res.Entries[2].Kind != desktop.KindEnd ||
		res.Entries[2].Text != res.Session.Error || string(res.Entries[2].Data) != `{"status":"interrupted"}` {
		t.Fatalf("read after lease loss = %+v", res)
	}
	for _, what := range []string{"heartbeat", "events", "complete"} {
		code, body := r.post(c.Task.ID, what, map[string]any{"fence": c.Fence,
			"events": []desktop.RunnerEvent{{Seq: 2, Type: desktop.EventAssistantText, Text: "late"}}})
		if code != 409 || !strings.Contains(string(body), `"code":"stale_claim"`) || !strings.Contains(string(body), `"state":"interrupted"`) {
			t.Fatalf("%s after interruption = %d %s", what, code, body)
		}
	}
}

// A fencing token that is not the task's current claim is refused.
func TestStaleFenceRefused(t *testing.T) {
	e := newEnv(t)
	alice := e.member("acme", "alice")
	r := e.runner(alice, "laptop", "laptop")
	sess := e.create(alice, map[string]any{"target": "desktop", "instructions": "x"})
	c := r.claim(sess.LatestTaskID)
	for _, fence := range []uint64{c.Fence - 1, c.Fence + 1} {
		code, body := r.post(c.Task.ID, "heartbeat", map[string]any{"fence": fence})
		if code != 409 || !strings.Contains(string(body), `"code":"stale_claim"`) || !strings.Contains(string(body), `"leaseValid":false`) {
			t.Fatalf("heartbeat with fence %d = %d %s", fence, code, body)
		}
	}
	if code, body := r.post(c.Task.ID, "complete", map[string]any{"fence": c.Fence + 1}); code != 409 {
		t.Fatalf("complete with a wrong fence = %d %s", code, body)
	}
	if code, body := r.post(c.Task.ID, "heartbeat", map[string]any{}); code != 400 {
		t.Fatalf("heartbeat without a fence = %d %s", code, body)
	}
	r.heartbeat(c.Task.ID, c.Fence) // the real claim still holds
}

// Two spine instances sweeping the same lost lease at once write one
// transition between them.
func TestTwoSweepersOneTransition(t *testing.T) {
	e := newEnv(t)
	other := e.service() // a second instance: same log and database, no projector of its own
	alice := e.member("acme", "alice")
	r := e.runner(alice, "laptop", "laptop")
	var tasks []string
	for i := range 10 {
		sess := e.create(alice, map[string]any{"target": "desktop", "instructions": fmt.Sprint("job ", i)})
		r.claim(sess.LatestTaskID)
		tasks = append(tasks, sess.LatestTaskID)
	}
	later := time.Now().Add(2 * time.Minute)
	var wg sync.WaitGroup
	results := make([]desktop.SweepResult, 2)
	for i, svc := range []*desktop.Service{e.svc, other} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := svc.Sweep(context.Background(), later)
			if err != nil {
				t.Errorf("sweep: %v", err)
			}
			results[i] = res
		}()
	}
	wg.Wait()
	if got := results[0].Interrupted + results[1].Interrupted; got != 10 {
		t.Fatalf("interrupted %d between the two sweeps (%+v), want 10", got, results)
	}
	for _, id := range tasks {
		if n := countOnSubject(t, e, "spine.task."+id+".interrupted"); n != 1 {
			t.Fatalf("task %s has %d interruptions in the log", id, n)
		}
	}
}

// Unclaimed past deliverBy, a queued task expires with a readable state.
func TestDeliverByExpires(t *testing.T) {
	e := newEnv(t)
	alice := e.member("acme", "alice")
	deliverBy := time.Now().Add(5 * time.Minute).UTC().Truncate(time.Second)
	sess := e.create(alice, map[string]any{"target": "desktop", "instructions": "whenever", "deliverBy": deliverBy})
	if sess.State != desktop.StateQueued || sess.RunnerID != "" {
		t.Fatalf("created = %+v", sess)
	}
	if res, _ := e.svc.Sweep(context.Background(), deliverBy.Add(-time.Second)); res.Expired != 0 {
		t.Fatalf("expired before deliverBy: %+v", res)
	}
	if res, _ := e.svc.Sweep(context.Background(), deliverBy.Add(time.Second)); res.Expired != 1 {
		t.Fatalf("not expired after deliverBy: %+v", res)
	}
	res := e.read(alice, sess.ID, "0")
	if res.Session.State != desktop.StateExpired || !res.Ended ||
		!strings.Contains(res.Session.Error, "nobody claimed it by deliverBy "+deliverBy.Format(time.RFC3339)) {
		t.Fatalf("read = %+v", res.Session)
	}
	code, body := e.do("POST", "/v1/remote-sessions", alice, map[string]any{"target": "desktop", "instructions": "x",
		"deliverBy": time.Now().Add(-time.Minute)})
	if code != 400 || !strings.Contains(string(body), "deliverBy must be in the future") {
		t.Fatalf("past deliverBy = %d %s", code, body)
	}
}

// No runner present and no deliverBy: create fails fast with the human step.
func TestNoRunnerFailsFast(t *testing.T) {
	e := newEnv(t)
	alice := e.member("acme", "alice")
	code, body := e.do("POST", "/v1/remote-sessions", alice, map[string]any{"target": "desktop", "instructions": "x"})
	if code != 409 || !strings.Contains(string(body), `"code":"needs_desktop_runner"`) || !strings.Contains(string(body), "run `spine runner login` and `spine runner` on your machine") ||
		strings.Contains(string(body), "sign in") {
		t.Fatalf("create with no runner ever = %d %s", code, body)
	}
	e.runner(alice, "studio", "studio-mac")
	e.clock.Advance(11 * time.Minute) // out of the 10-minute presence window
	code, body = e.do("POST", "/v1/remote-sessions", alice, map[string]any{"target": "desktop", "instructions": "x"})
	errBody := decode[struct{ Error map[string]string }](t, body)
	if code != 409 || errBody.Error["action"] == "" || !strings.HasPrefix(errBody.Error["action"], "start `spine runner` on studio-mac (last seen ") ||
		errBody.Error["machine"] != "studio-mac" {
		t.Fatalf("create with an absent runner = %d %s", code, body)
	}
	list := decode[desktop.ListResult](t, e.must(200, "GET", "/v1/remote-sessions", alice, nil))
	if len(list.Sessions) != 0 || len(list.Runners) != 1 || list.Runners[0].Present {
		t.Fatalf("nothing may be queued: %+v", list)
	}
	if code, body := e.do("POST", "/v1/remote-sessions", alice, map[string]any{"target": "desktop", "instructions": "x", "runnerId": "nope"}); code != 404 {
		t.Fatalf("unknown pinned runner = %d %s", code, body)
	}
}

// A member's cancel reaches the runner through its heartbeat.
func TestCancelThroughHeartbeat(t *testing.T) {
	e := newEnv(t)
	alice := e.member("acme", "alice")
	r := e.runner(alice, "laptop", "laptop")
	sess := e.create(alice, map[string]any{"target": "desktop", "instructions": "x"})
	c := r.claim(sess.LatestTaskID)
	if lease := r.heartbeat(c.Task.ID, c.Fence); lease.CancelRequested {
		t.Fatal("cancel requested before anyone asked")
	}
	e.must(200, "POST", "/v1/remote-sessions/"+sess.ID+"/cancel", alice, nil)
	if lease := r.heartbeat(c.Task.ID, c.Fence); !lease.CancelRequested || !lease.LeaseValid {
		t.Fatalf("heartbeat after cancel = %+v", lease)
	}
	code, body := r.post(c.Task.ID, "complete", map[string]any{"fence": c.Fence, "status": "cancelled"})
	if code != 200 || decode[desktop.Receipt](t, body).State != desktop.StateCancelled {
		t.Fatalf("complete as cancelled = %d %s", code, body)
	}
	// Cancelling a queued task ends it at once.
	sess2 := e.create(alice, map[string]any{"target": "desktop", "instructions": "y"})
	got := decode[desktop.Session](t, e.must(200, "POST", "/v1/remote-sessions/"+sess2.ID+"/cancel", alice, nil))
	if got.State != desktop.StateCancelled {
		t.Fatalf("cancelled queued session = %+v", got)
	}
}

// Decode refuses what breaks the rules, and the projection dead-letters it.
func TestDecodeRules(t *testing.T) {
	good := desktop.Message{V: 1, Type: desktop.TypeClaimed, ID: "m-1", At: time.Now(), Org: "o", Member: "m",
		TaskID: "t1", RunnerID: "r1"}
	data, _ := json.Marshal(good)
	if _, err := desktop.Decode("spine.task.t1.claimed", data); err != nil {
		t.Fatalf("good message: %v", err)
	}
	for name, c := range map[string]struct {
		subject, data, reason string
	}{
		"wrong subject": {"spine.task.t2.claimed", string(data), streams.ReasonSubject},
		"malformed":     {"spine.task.t1.claimed", "{", streams.ReasonMalformed},
		"version":       {"spine.task.t1.claimed", strings.Replace(string(data), `"v":1`, `"v":2`, 1), streams.ReasonUnknownVersion},
		"type":          {"spine.task.t1.claimed", strings.Replace(string(data), `task.claimed`, `task.nope`, 1), streams.ReasonUnknownType},
		"wrong type":    {"spine.task.t1.claimed", strings.Replace(string(data), `"v":1`, `"v":"1"`, 1), streams.ReasonWrongType},
		"no runner":     {"spine.task.t1.claimed", strings.Replace(string(data), `"runnerId":"r1"`, `"runnerId":"a.b"`, 1), streams.ReasonInvalidID},
	} {
		_, err := desktop.Decode(c.subject, []byte(c.data))
		rej, ok := streams.AsRejection(err)
		if !ok || rej.Reason != c.reason {
			t.Errorf("%s: err = %v, want %s", name, err, c.reason)
		}
	}
}

// A member's cancel while the projection lags the log (a runner's event
// already in the log, not yet applied) is taken once the projection
// catches up, not refused as busy: a write that loses to a move the caller
// could not read yet waits for it before it reads again. Before, each of
// its retries read the same stale task and lost again: 503 unavailable
// (TestRunnerCancelStopsTheApp failed so once in a clean-clone run).
func TestCancelWhileTheProjectionLags(t *testing.T) {
	e := newEnv(t)
	alice := e.member("acme", "alice")
	r := e.runner(alice, "laptop", "laptop")
	sess := e.create(alice, map[string]any{"target": "desktop", "instructions": "x"})
	c := r.claim(sess.LatestTaskID)
	r.heartbeat(c.Task.ID, c.Fence)
	ctx := context.Background()
	hold, err := e.h.Pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	released := make(chan struct{})
	release := sync.OnceFunc(func() { hold.Rollback(ctx); close(released) })
	defer release()
	if _, err := hold.Exec(ctx, `SELECT 1 FROM projector_checkpoints WHERE name = $1 FOR UPDATE`, desktop.ProjectorName); err != nil {
		t.Fatal(err)
	}
	posted := make(chan int, 1)
	go func() { // in the log at once; its answer waits for the projection
		code, _ := r.post(c.Task.ID, "events", map[string]any{"fence": c.Fence,
			"events": []map[string]any{{"seq": 1, "type": "status", "status": "working"}}})
		posted <- code
	}()
	st, err := e.h.JS.Stream(ctx, streams.StreamTasks)
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		m, err := st.GetLastMsgForSubject(ctx, desktop.TaskSubjects(c.Task.ID))
		if err == nil && strings.HasSuffix(m.Subject, ".events") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the runner's events never reached the log: %v", err)
		}
	}
	go func() { time.Sleep(300 * time.Millisecond); release() }()
	if code, body := e.do("POST", "/v1/remote-sessions/"+sess.ID+"/cancel", alice, nil); code != 200 {
		t.Fatalf("cancel while the projection lags = %d %s, want 200", code, body)
	}
	<-released
	if code := <-posted; code != 200 {
		t.Fatalf("events = %d", code)
	}
	if lease := r.heartbeat(c.Task.ID, c.Fence); !lease.CancelRequested {
		t.Fatalf("heartbeat after the cancel = %+v", lease)
	}
}
