package node_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/spinehq/spine/internal/config"
	"github.com/spinehq/spine/streams"
)

// Under pressure the doors say when to come back: an export over the
// in-flight budget is 429 busy, one the log cannot take 503; both carry
// Retry-After (exporters retry), and the 503 a google.rpc.Status body. A
// hook the log cannot take is answered 503 too, at once.
func TestTelemetryDoorsUnderPressure(t *testing.T) {
	f := startLimited(t, func(c *config.Config) { c.InflightBytes = 1 << 20 })
	alice := f.token("acme", "alice")
	c := otlpCaptures(t, "codex-json-logs-1")[0]
	f.trickle("/otlp/v1/logs", alice, 1<<20) // holds acme's share of the budget
	waitFor(t, "the trickler to hold budget", func() bool { return f.inflight() > 0 })
	resp, body := f.postOTLP(c, alice)
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("over the budget: %d %q, Retry-After %q", resp.StatusCode, body, resp.Header.Get("Retry-After"))
	}
	if err := f.n.JS.DeleteStream(context.Background(), streams.StreamSessions); err != nil {
		t.Fatal(err)
	}
	globex := f.token("globex", "bob") // another org: not behind the trickle's share
	resp, body = f.postOTLP(c, globex)
	var status struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	}
	if err := json.Unmarshal(body, &status); resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" ||
		err != nil || status.Code != 14 || status.Message == "" {
		t.Fatalf("the log unavailable: %d %q, Retry-After %q", resp.StatusCode, body, resp.Header.Get("Retry-After"))
	}
	req, _ := http.NewRequest("POST", f.base+"/v1/hooks/claude-code", bytes.NewReader(hookBody(t, "SessionEnd")))
	req.Header.Set("Authorization", "Bearer "+globex)
	hook, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	hook.Body.Close()
	if hook.StatusCode != http.StatusServiceUnavailable || hook.Header.Get("Retry-After") == "" {
		t.Fatalf("a hook with the log unavailable: %d, Retry-After %q", hook.StatusCode, hook.Header.Get("Retry-After"))
	}
}
