package desktop_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/spinehq/spine/desktop"
	"github.com/spinehq/spine/internal/spinetest"
	"github.com/spinehq/spine/streams"
)

// U+0000 anywhere a runner or member writes (PostgreSQL cannot store it) is
// kept as U+FFFD, never lost to a dead letter; a NUL in a path is a 404.
func TestNULIsScrubbed(t *testing.T) {
	e := newEnv(t)
	alice := e.member("acme", "alice")
	r := e.runner(alice, "laptop", "mac\x00book")
	sess := e.create(alice, map[string]any{"target": "desktop", "title": "t\x00itle", "instructions": "run\x00it"})
	c := r.claim(sess.LatestTaskID)
	evs := []map[string]any{
		{"seq": 1, "type": desktop.EventAssistantText, "text": "a\x00b"},
		{"seq": 2, "type": desktop.EventUsage, "usage": json.RawMessage(`{"k\u0000":"v\u0000"}`)},
		{"seq": 3, "type": desktop.EventTerminal, "status": "failed", "error": "e\x00"},
	}
	if code, body := r.post(c.Task.ID, "events", map[string]any{"fence": c.Fence, "events": evs}); code != 200 {
		t.Fatalf("events = %d %s", code, body)
	}
	if code, body := r.post(c.Task.ID, "complete", map[string]any{"fence": c.Fence, "error": "x\x00"}); code != 200 {
		t.Fatalf("complete = %d %s", code, body)
	}
	res := e.read(alice, sess.ID, "0")
	got := []string{res.Session.Title, res.Session.Machine, res.Session.Error}
	for _, en := range res.Entries {
		got = append(got, en.Text+string(en.Data))
	}
	want := []string{"t\uFFFDitle", "mac\uFFFDbook", "x\uFFFD", "run\uFFFDit", "a\uFFFDb",
		"{\"usage\":{\"k\uFFFD\":\"v\uFFFD\"}}", "{\"error\":\"e\uFFFD\",\"status\":\"failed\"}", "x\uFFFD{\"status\":\"done\"}"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("read back %q, want %q", got, want)
	}
	for _, c := range []struct{ method, path, token, code string }{
		{"GET", "/v1/remote-sessions/rs-%00", alice, "unknown_session"},
		{"POST", "/v1/remote-sessions/rs-%00/messages", alice, "unknown_session"},
		{"POST", "/v1/desktop-runner/tasks/dt-%00/claim", r.token, "unknown_task"},
		{"DELETE", "/v1/desktop-runner/tokens/x%00", alice, "unknown_token"},
	} {
		code, body := e.do(c.method, c.path, c.token, map[string]string{"prompt": "p"})
		if code != 404 || !strings.Contains(string(body), `"code":"`+c.code+`"`) {
			t.Errorf("%s %s = %d %s", c.method, c.path, code, body)
		}
	}
}

// A message already in the log with U+0000 decodes with U+FFFD.
func TestDecodeScrubsNUL(t *testing.T) {
	data := `{"v":1,"type":"task.events","id":"m-1","at":"2026-01-01T00:00:00Z","org":"o","member":"m","taskId":"t1",` +
		`"fence":3,"events":[{"seq":1,"type":"usage","text":"a\u0000","usage":{"n\u0000":1}}]}`
	m, err := desktop.Decode("spine.task.t1.events", []byte(data))
	if err != nil {
		t.Fatal(err)
	}
	if e := m.Events[0]; e.Text != "a\uFFFD" || string(e.Usage) != `{"n`+"\uFFFD"+`":1}` {
		t.Fatalf("decoded %+v", e)
	}
}

// Event seqs within one post must increase: [3,2] and [2,2] are refused,
// not half dropped as duplicates.
func TestEventSeqsIncreaseWithinAPost(t *testing.T) {
	e := newEnv(t)
	alice := e.member("acme", "alice")
	r := e.runner(alice, "laptop", "laptop")
	c := r.claim(e.create(alice, map[string]any{"target": "desktop", "instructions": "x"}).LatestTaskID)
	for _, seqs := range [][2]int64{{3, 2}, {2, 2}} {
		evs := []desktop.RunnerEvent{{Seq: seqs[0], Type: desktop.EventStatus}, {Seq: seqs[1], Type: desktop.EventStatus}}
		code, body := r.post(c.Task.ID, "events", map[string]any{"fence": c.Fence, "events": evs})
		if code != 400 || !strings.Contains(string(body), "seqs increase within a post") {
			t.Fatalf("seqs %v = %d %s", seqs, code, body)
		}
	}
}

// A post whose message would not fit in the log is a 413 with a code, both
// when the body is too big and when its encoding grows past the limit.
func TestEventsTooLargeFor413(t *testing.T) {
	e := newEnv(t)
	alice := e.member("acme", "alice")
	r := e.runner(alice, "laptop", "laptop")
	c := r.claim(e.create(alice, map[string]any{"target": "desktop", "instructions": "x"}).LatestTaskID)
	post := func(text string, n int) (int, []byte) {
		evs := make([]desktop.RunnerEvent, n)
		for i := range evs {
			evs[i] = desktop.RunnerEvent{Seq: int64(i + 1), Type: desktop.EventAssistantText, Text: text}
		}
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false) // the body is small; the message (HTML-escaped) is not
		_ = enc.Encode(map[string]any{"fence": c.Fence, "events": evs})
		return e.do("POST", "/v1/desktop-runner/tasks/"+c.Task.ID+"/events", r.token, b.Bytes())
	}
	for name, tc := range map[string]struct {
		text string
		n    int
	}{
		"body over 4 MiB":            {strings.Repeat("x", 250<<10), 20},
		"message over 4 MiB encoded": {strings.Repeat("<", 200<<10), 12},
	} {
		code, body := post(tc.text, tc.n)
		if code != 413 || !strings.Contains(string(body), `"code":"too_large"`) {
			t.Errorf("%s: %d %.300s", name, code, body)
		}
	}
	if code, body := post("fits", 3); code != 200 {
		t.Fatalf("a post that fits = %d %s", code, body)
	}
}

// Members racing to mint tokens for one runnerId: exactly one owns it, the
// others get a clean 409 runner_taken; the owner may mint again.
func TestRunnerIDHasOneOwner(t *testing.T) {
	e := newEnv(t)
	members := []string{e.member("acme", "a"), e.member("acme", "b"), e.member("other", "a"), e.member("acme", "c")}
	type result struct {
		id, member int
		code       int
		body       string
	}
	results := make(chan result, 40)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for id := range 10 {
		for m, tok := range members {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				code, body := e.do("POST", "/v1/desktop-runner/tokens", tok, map[string]string{"runnerId": fmt.Sprint("box-", id)})
				results <- result{id, m, code, string(body)}
			}()
		}
	}
	close(start)
	wg.Wait()
	close(results)
	owners := map[int][]int{}
	for r := range results {
		switch {
		case r.code == 201:
			owners[r.id] = append(owners[r.id], r.member)
		case r.code != 409 || !strings.Contains(r.body, `"code":"runner_taken"`):
			t.Errorf("mint box-%d as member %d = %d %s", r.id, r.member, r.code, r.body)
		}
	}
	for id := range 10 {
		if len(owners[id]) != 1 {
			t.Fatalf("box-%d minted by members %v, want exactly one", id, owners[id])
		}
	}
	e.must(201, "POST", "/v1/desktop-runner/tokens", members[owners[0][0]], map[string]string{"runnerId": "box-0"})
}

// A runner's event stream offers only work of kinds it declared, and
// revoking its token ends the stream at once.
func TestEventStreamKindsAndRevocation(t *testing.T) {
	e := newEnv(t)
	alice := e.member("acme", "alice")
	r := e.runner(alice, "auto-only", "old-laptop")
	r.register("old-laptop", []string{"automation"})
	tokens := decode[struct{ Tokens []desktop.RunnerToken }](t, e.must(200, "GET", "/v1/desktop-runner/tokens", alice, nil)).Tokens
	stream := r.events(context.Background())
	stream.next(t, "ready", 10*time.Second)
	e.create(alice, map[string]any{"target": "desktop", "instructions": "hi", "deliverBy": time.Now().Add(time.Hour)})
	e.must(204, "DELETE", "/v1/desktop-runner/tokens/"+tokens[0].TokenID, alice, nil)
	rest := stream.rest(t, 10*time.Second) // announcements arrive in order: the work, then the revocation
	if len(rest) != 1 || rest[0][0] != "unauthorized" || !strings.Contains(rest[0][1], "revoked") {
		t.Fatalf("events after create and revoke = %v", rest)
	}
	if code, _ := e.do("GET", "/v1/desktop-runner/work", r.token, nil); code != 401 {
		t.Fatalf("work with the revoked token = %d", code)
	}
}

// An event stream outliving its token's lifetime ends on its next keepalive.
func TestEventStreamEndsWhenTokenExpires(t *testing.T) {
	e := newEnv(t)
	r := e.runner(e.member("acme", "alice"), "laptop", "laptop")
	stream := r.events(context.Background())
	stream.next(t, "ready", 10*time.Second)
	stream.next(t, ":", 10*time.Second)
	e.clock.Advance(desktop.RunnerTokenTTL + time.Minute)
	rest := stream.rest(t, 10*time.Second)
	if len(rest) != 1 || rest[0][0] != "unauthorized" || !strings.Contains(rest[0][1], "expired") {
		t.Fatalf("events after expiry = %v", rest)
	}
}

// A runner that only listens on its event stream stays present.
func TestListeningRunnerStaysPresent(t *testing.T) {
	e := newEnv(t)
	alice := e.member("acme", "alice")
	r := e.runner(alice, "laptop", "laptop")
	stream := r.events(context.Background())
	stream.next(t, "ready", 10*time.Second)
	e.clock.Advance(desktop.PresenceWindow + time.Minute)
	stream.next(t, ":", 10*time.Second)
	stream.next(t, ":", 10*time.Second) // a whole tick after the clock moved
	list := decode[desktop.ListResult](t, e.must(200, "GET", "/v1/remote-sessions", alice, nil))
	if len(list.Runners) != 1 || !list.Runners[0].Present {
		t.Fatalf("a listening runner after %s: %+v", desktop.PresenceWindow, list.Runners)
	}
	sess := e.create(alice, map[string]any{"target": "desktop", "instructions": "still here?"})
	if sess.RunnerID != "laptop" {
		t.Fatalf("created = %+v", sess)
	}
}

// A task queued for a machine that then leaves, with no deliverBy, expires
// with the readable reason runner_gone once the presence window has passed.
func TestRunnerGoneExpiresQueuedTask(t *testing.T) {
	e := newEnv(t)
	alice := e.member("acme", "alice")
	e.runner(alice, "laptop", "laptop")
	sess := e.create(alice, map[string]any{"target": "desktop", "instructions": "x"})
	waiting := e.create(alice, map[string]any{"target": "desktop", "instructions": "y", "deliverBy": time.Now().Add(time.Hour)})
	if res, err := e.svc.Sweep(context.Background(), time.Now().Add(desktop.PresenceWindow-time.Minute)); err != nil || res.RunnerGone != 0 {
		t.Fatalf("sweep inside the window = %+v, %v", res, err)
	}
	res, err := e.svc.Sweep(context.Background(), time.Now().Add(desktop.PresenceWindow+time.Minute))
	if err != nil || res.RunnerGone != 1 || res.Expired != 0 {
		t.Fatalf("sweep after the window = %+v, %v", res, err)
	}
	got := e.read(alice, sess.ID, "0")
	if got.Session.State != desktop.StateExpired || !got.Ended || !strings.HasPrefix(got.Session.Error, "runner_gone: ") {
		t.Fatalf("read = %+v", got.Session)
	}
	if s := e.read(alice, waiting.ID, "0").Session; s.State != desktop.StateQueued {
		t.Fatalf("a task with deliverBy waits for it: %+v", s)
	}
}

// publishRaw stores m on subject as it is, as a buggy or foreign writer
// would, and waits until the projection has taken it.
func (e *env) publishRaw(subject string, m any) uint64 {
	e.t.Helper()
	data, ok := m.([]byte)
	if !ok {
		data, _ = json.Marshal(m)
	}
	msg := nats.NewMsg(subject)
	msg.Data = data
	msg.Header.Set(jetstream.MsgIDHeader, fmt.Sprintf("raw-%d", time.Now().UnixNano()))
	ack, err := e.h.JS.PublishMsg(context.Background(), msg)
	if err != nil {
		e.t.Fatal(err)
	}
	deadline := time.After(spinetest.WaitTimeout)
	for e.proj.Checkpoint() < ack.Sequence {
		select {
		case <-e.commits:
		case <-deadline:
			e.t.Fatalf("the projection did not take seq %d", ack.Sequence)
		}
	}
	return ack.Sequence
}

// A refused message on a task's subjects still moves the task's last
// sequence, so claims (which expect it) do not conflict forever.
func TestRefusedMessageKeepsTaskClaimable(t *testing.T) {
	e := newEnv(t)
	alice := e.member("acme", "alice")
	sess := e.create(alice, map[string]any{"target": "desktop", "instructions": "x", "deliverBy": time.Now().Add(time.Hour)})
	e.publishRaw("spine.task."+sess.LatestTaskID+".junk", []byte(`{"v":9}`))
	r := e.runner(alice, "laptop", "laptop")
	if c := r.claim(sess.LatestTaskID); c.Fence == 0 {
		t.Fatalf("claim = %+v", c)
	}
}

// A queued message the projection refuses leaves no task behind, so the
// task's later messages are refused too instead of stopping the projector.
func TestRefusedQueuedLeavesNoOrphan(t *testing.T) {
	e := newEnv(t)
	alice := e.member("acme", "alice")
	base := desktop.Message{V: 1, At: time.Now(), Org: "acme", Member: "alice", TaskID: "dt-orphan"}
	queued, claimed, events := base, base, base
	queued.ID, queued.Type = "m-o1", desktop.TypeQueued
	queued.Task = &desktop.TaskSpec{Kind: desktop.KindRemoteSession, Target: desktop.TargetDesktop,
		RemoteSessionID: "rs-nope", Instructions: "follow-up to nothing"}
	claimed.ID, claimed.Type, claimed.RunnerID = "m-o2", desktop.TypeClaimed, "laptop"
	e.publishRaw(queued.Subject(), queued)
	events.ID, events.Type, events.Fence = "m-o3", desktop.TypeEvents, e.publishRaw(claimed.Subject(), claimed)
	events.Events = []desktop.RunnerEvent{{Seq: 1, Type: desktop.EventAssistantText, Text: "hi"}}
	e.publishRaw(events.Subject(), events)

	e.runner(alice, "laptop", "laptop")
	e.create(alice, map[string]any{"target": "desktop", "instructions": "the projector still runs"})
	var tasks, dead int
	err := e.h.Pool.QueryRow(context.Background(), `SELECT (SELECT count(*) FROM desktop_tasks WHERE id = 'dt-orphan'),
		(SELECT count(*) FROM dead_letters WHERE stream = $1)`, streams.StreamTasks).Scan(&tasks, &dead)
	if err != nil || tasks != 0 || dead != 3 {
		t.Fatalf("orphan rows %d, dead letters %d (want 0 and 3): %v", tasks, dead, err)
	}
}

// Events PostgreSQL would refuse are refused at the door (before, they were
// dead-lettered as unstorable), and the task can still be swept later.
func TestUnstorableEventsKeepTaskSweepable(t *testing.T) {
	e := newEnv(t)
	alice := e.member("acme", "alice")
	r := e.runner(alice, "laptop", "laptop")
	c := r.claim(e.create(alice, map[string]any{"target": "desktop", "instructions": "x"}).LatestTaskID)
	evs := []map[string]any{{"seq": 1, "type": desktop.EventUsage, "usage": json.RawMessage(`{"n":1e999999}`)}}
	code, body := r.post(c.Task.ID, "events", map[string]any{"fence": c.Fence, "events": evs})
	if code != 400 || !strings.Contains(string(body), `"code":"invalid_field"`) {
		t.Fatalf("unstorable events = %d %s", code, body)
	}
	res, err := e.svc.Sweep(context.Background(), time.Now().Add(desktop.LeaseTTL+time.Minute))
	if err != nil || res.Interrupted != 1 || res.Conflicts != 0 {
		t.Fatalf("sweep = %+v, %v", res, err)
	}
}
