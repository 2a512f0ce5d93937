package desktop_test

import (
	"context"
	"encoding/json"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/spinehq/spine/desktop"
	"github.com/spinehq/spine/streams"
)

// wantCode fails unless the answer is status with the error code code.
func wantCode(t *testing.T, what string, status int, code string, gotStatus int, body []byte) {
	t.Helper()
	var b struct {
		Error struct{ Code, Message string }
	}
	_ = json.Unmarshal(body, &b)
	if gotStatus != status || b.Error.Code != code {
		t.Fatalf("%s = %d %.300s, want %d %s", what, gotStatus, body, status, code)
	}
}

// A register whose machine is not UTF-8 is refused with ingest's code, not
// stored with U+FFFD in its place; a machine over its bound is
// field_too_long, naming the field and never repeating it.
func TestRegisterRefusesBadMachine(t *testing.T) {
	e := newEnv(t)
	alice := e.member("acme", "alice")
	r := e.runner(alice, "laptop", "laptop")
	raw := []byte(`{"machine":"mac` + "\xff" + `book","apps":["claude-code"],"capabilities":["remote_session"],"protocolVersion":1}`)
	code, body := e.do("POST", "/v1/desktop-runner/register", r.token, raw)
	wantCode(t, "register with invalid UTF-8", 400, streams.ReasonInvalidUTF8, code, body)
	long := strings.Repeat("m", streams.MaxNameLen+1)
	code, body = e.do("POST", "/v1/desktop-runner/register", r.token, desktop.Inventory{Machine: long,
		Capabilities: []string{desktop.KindRemoteSession}, ProtocolVersion: 1})
	wantCode(t, "register with a long machine", 400, streams.ReasonFieldTooLong, code, body)
	if !strings.Contains(string(body), "machine") || strings.Contains(string(body), "mmmmmmmm") {
		t.Fatalf("refusal %s must name the field, never the value", body)
	}
	runners := e.read(alice, e.create(alice, map[string]any{"target": "desktop", "instructions": "x"}).ID, "0")
	if runners.Session.Machine != "laptop" {
		t.Fatalf("machine is %q after refused registers", runners.Session.Machine)
	}
}

// A claim's body is empty or a JSON object: garbage (null too) is refused and the task
// stays queued for a claim that means it.
func TestClaimRefusesGarbageBody(t *testing.T) {
	e := newEnv(t)
	alice := e.member("acme", "alice")
	r := e.runner(alice, "laptop", "laptop")
	first := e.create(alice, map[string]any{"target": "desktop", "instructions": "x"}).LatestTaskID
	for _, body := range []string{"garbage", `[1,2]`, `"x"`, `{} trailing`, `null`, ` null `} {
		code, resp := e.do("POST", "/v1/desktop-runner/tasks/"+first+"/claim", r.token, []byte(body))
		wantCode(t, "claim with body "+body, 400, "bad_request", code, resp)
	}
	if got := r.claim(first); got.Task.State != desktop.StateClaimed {
		t.Fatalf("claim after refusals: %+v", got)
	}
	second := e.create(alice, map[string]any{"target": "desktop", "instructions": "y"}).LatestTaskID
	e.must(200, "POST", "/v1/desktop-runner/tasks/"+second+"/claim", r.token, []byte(`{}`))
}

// Event seqs are bounded: seq 2^63-1 is refused, so it cannot turn every
// later event of the task into a duplicate.
func TestEventSeqIsBounded(t *testing.T) {
	e := newEnv(t)
	alice := e.member("acme", "alice")
	r := e.runner(alice, "laptop", "laptop")
	c := r.claim(e.create(alice, map[string]any{"target": "desktop", "instructions": "x"}).LatestTaskID)
	for _, seq := range []int64{math.MaxInt64, streams.MaxSeq + 1} {
		evs := []desktop.RunnerEvent{{Seq: seq, Type: desktop.EventStatus}}
		code, body := r.post(c.Task.ID, "events", map[string]any{"fence": c.Fence, "events": evs})
		wantCode(t, "events seq "+strconv.FormatInt(seq, 10), 400, streams.ReasonInvalidField, code, body)
	}
	evs := []desktop.RunnerEvent{{Seq: 1, Type: desktop.EventStatus}, {Seq: streams.MaxSeq, Type: desktop.EventStatus}}
	code, body := r.post(c.Task.ID, "events", map[string]any{"fence": c.Fence, "events": evs})
	if rec := decode[desktop.EventsReceipt](t, body); code != 200 || rec.Accepted != 2 || rec.Duplicates != 0 {
		t.Fatalf("events 1 and MaxSeq = %d %s", code, body)
	}
}

// Usage jsonb cannot store (an unpaired surrogate escape, a scale past
// numeric's) is refused at the door, before anything is published: the
// task's log holds no dead letter for it.
func TestEventUsageMustBeStorable(t *testing.T) {
	e := newEnv(t)
	alice := e.member("acme", "alice")
	r := e.runner(alice, "laptop", "laptop")
	c := r.claim(e.create(alice, map[string]any{"target": "desktop", "instructions": "x"}).LatestTaskID)
	for i, usage := range []string{`{"s":"\ud800"}`, `{"n":1e-16384}`} {
		evs := []map[string]any{{"seq": i + 1, "type": desktop.EventUsage, "usage": json.RawMessage(usage)}}
		code, body := r.post(c.Task.ID, "events", map[string]any{"fence": c.Fence, "events": evs})
		wantCode(t, "usage "+usage, 400, streams.ReasonInvalidField, code, body)
	}
	var n int
	if err := e.h.Pool.QueryRow(context.Background(), `SELECT count(*) FROM dead_letters`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("%d dead letters (%v), want none", n, err)
	}
}

// Every string a runner or member sends is held to its bound in the one
// table: over it is 400 field_too_long naming the field.
func TestRunnerAndRemoteSessionFieldBounds(t *testing.T) {
	e := newEnv(t)
	alice := e.member("acme", "alice")
	r := e.runner(alice, "laptop", "laptop")
	sess := e.create(alice, map[string]any{"target": "desktop", "instructions": "x"})
	c := r.claim(sess.LatestTaskID)
	over := func(n int) string { return strings.Repeat("z", n+1) }
	event := func(ev map[string]any) map[string]any {
		return map[string]any{"fence": c.Fence, "events": []map[string]any{ev}}
	}
	for _, tc := range []struct {
		name, method, path, token string
		body                      any
	}{
		{"events text", "POST", "/v1/desktop-runner/tasks/" + c.Task.ID + "/events", r.token,
			event(map[string]any{"seq": 1, "type": desktop.EventAssistantText, "text": over(streams.MaxEventTextLen)})},
		{"events error", "POST", "/v1/desktop-runner/tasks/" + c.Task.ID + "/events", r.token,
			event(map[string]any{"seq": 1, "type": desktop.EventTerminal, "status": "failed", "error": over(streams.MaxErrorLen)})},
		{"events usage", "POST", "/v1/desktop-runner/tasks/" + c.Task.ID + "/events", r.token,
			event(map[string]any{"seq": 1, "type": desktop.EventUsage, "usage": map[string]string{"u": over(streams.MaxUsageRawLen)}})},
		{"complete error", "POST", "/v1/desktop-runner/tasks/" + c.Task.ID + "/complete", r.token,
			map[string]any{"fence": c.Fence, "error": over(streams.MaxErrorLen)}},
		{"create title", "POST", "/v1/remote-sessions", alice,
			map[string]any{"target": "desktop", "instructions": "x", "title": over(streams.MaxNameLen)}},
		{"create title that redaction lengthens", "POST", "/v1/remote-sessions", alice, map[string]any{"target": "desktop",
			"instructions": "x", "title": strings.Repeat("t", streams.MaxNameLen-len(" password=abc1")) + " password=abc1"}},
		{"create workspace", "POST", "/v1/remote-sessions", alice,
			map[string]any{"target": "desktop", "instructions": "x", "workspace": over(streams.MaxPathLen)}},
		{"create instructions", "POST", "/v1/remote-sessions", alice,
			map[string]any{"target": "desktop", "instructions": over(streams.MaxInstructionsLen)}},
		{"send prompt", "POST", "/v1/remote-sessions/" + sess.ID + "/messages", alice,
			map[string]any{"prompt": over(streams.MaxInstructionsLen)}},
	} {
		code, body := e.do(tc.method, tc.path, tc.token, tc.body)
		wantCode(t, tc.name, 400, streams.ReasonFieldTooLong, code, body)
		if strings.Contains(string(body), "zzzzzzzz") {
			t.Fatalf("%s: refusal repeats the value", tc.name)
		}
	}
	if got := r.heartbeat(c.Task.ID, c.Fence); !got.LeaseValid {
		t.Fatalf("task after refusals: %+v", got)
	}
}

// A message published straight to SPINE_TASKS with a field over its bound
// is dead-lettered field_too_long; the next message is projected.
func TestTasksProjectorDeadLettersLongFields(t *testing.T) {
	e := newEnv(t)
	at := time.Now().UTC().Format(time.RFC3339Nano)
	long := `{"v":1,"type":"runner.registered","id":"m-long","at":"` + at + `","org":"acme","member":"alice","runnerId":"r1",` +
		`"runner":{"machine":"` + strings.Repeat("m", 3000) + `","protocolVersion":1}}`
	good := `{"v":1,"type":"runner.registered","id":"m-good","at":"` + at + `","org":"acme","member":"alice","runnerId":"r2",` +
		`"runner":{"machine":"desk","protocolVersion":1,"capabilities":["remote_session"]}}`
	ctx := context.Background()
	e.publishRaw("spine.runner.r1.registered", []byte(long))
	e.publishRaw("spine.runner.r2.registered", []byte(good))
	var reason string
	if err := e.h.Pool.QueryRow(ctx, `SELECT reason FROM dead_letters WHERE subject = 'spine.runner.r1.registered'`).Scan(&reason); err != nil || reason != streams.ReasonFieldTooLong {
		t.Fatalf("dead letter reason %q (%v), want %s", reason, err, streams.ReasonFieldTooLong)
	}
	var machine string
	if err := e.h.Pool.QueryRow(ctx, `SELECT machine FROM desktop_runners WHERE id = 'r2'`).Scan(&machine); err != nil || machine != "desk" {
		t.Fatalf("next runner = %q, %v", machine, err)
	}
}
