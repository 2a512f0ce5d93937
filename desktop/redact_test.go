package desktop_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/spinehq/spine/desktop"
	"github.com/spinehq/spine/streams"
)

// TestDesktopRoutesRedactBeforeTheLog sends a key through every text a
// member and a runner can send (create, send, register, events of each
// kind, complete) and reads the whole SPINE_TASKS stream back: no message
// holds it, and the read API serves the text around it.
func TestDesktopRoutesRedactBeforeTheLog(t *testing.T) {
	const key = "sk-ant-api03-Zk9xV2hQ3mR7tY1uW4pL8nB6cD0eF5gH"
	e := newEnv(t)
	alice := e.member("acme", "alice")
	r := e.runner(alice, "laptop-1", "alice-laptop "+key)
	sess := e.create(alice, map[string]any{"target": "desktop", "title": "title " + key, "instructions": "use ANTHROPIC_API_KEY=" + key})
	c := r.claim(sess.LatestTaskID)
	evs := []desktop.RunnerEvent{
		{Seq: 1, Type: desktop.EventSessionID, SessionID: "0b0a5d1e-7c1f-4a59-9d5e-2f6f1d2c3b4a"},
		{Seq: 2, Type: desktop.EventAssistantText, Text: "found " + key + " in .env"},
		{Seq: 3, Type: desktop.EventUsage, Usage: []byte(`{"inputTokens":10,"note":"` + key + `"}`)},
		{Seq: 4, Type: desktop.EventTerminal, Status: "failed", Error: "auth failed for " + key},
	}
	if code, body := r.post(c.Task.ID, "events", map[string]any{"fence": c.Fence, "events": evs}); code != 200 {
		t.Fatalf("events = %d %s", code, body)
	}
	if code, body := r.post(c.Task.ID, "complete", map[string]any{"fence": c.Fence, "status": "done", "error": "exit: " + key}); code != 200 {
		t.Fatalf("complete = %d %s", code, body)
	}
	e.must(202, "POST", "/v1/remote-sessions/"+sess.ID+"/messages", alice, map[string]string{"prompt": "now use " + key})

	for seq, data := range streamBytes(t, e, streams.StreamTasks) {
		if strings.Contains(data, key) || strings.Contains(data, key[14:]) {
			t.Errorf("SPINE_TASKS message %d holds the key: %s", seq, data)
		}
	}
	res := e.must(200, "GET", "/v1/remote-sessions/"+sess.ID+"?since=0", alice, nil)
	if strings.Contains(string(res), key[14:]) || !strings.Contains(string(res), "found [REDACTED] in .env") {
		t.Errorf("read = %s", res)
	}
}

// streamBytes is every message stored on a stream, by sequence.
func streamBytes(t *testing.T, e *env, name string) map[uint64]string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	s, err := e.h.JS.Stream(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	out := map[uint64]string{}
	for seq := info.State.FirstSeq; seq <= info.State.LastSeq; seq++ {
		m, err := s.GetMsg(ctx, seq)
		if err != nil {
			t.Fatalf("message %d: %v", seq, err)
		}
		out[seq] = string(m.Data)
	}
	if len(out) == 0 {
		t.Fatal("the stream is empty")
	}
	return out
}
