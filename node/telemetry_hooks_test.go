package node_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/spinehq/spine/internal/config"
	"github.com/spinehq/spine/internal/pgtest"
	"github.com/spinehq/spine/internal/secretstest"
	"github.com/spinehq/spine/internal/spinetest"
	"github.com/spinehq/spine/node"
	"github.com/spinehq/spine/streams"
)

// logged are the session.telemetry of session on the log, as stored.
func (f *fixture) logged(session string) []string {
	f.t.Helper()
	c, err := f.n.JS.OrderedConsumer(context.Background(), streams.StreamSessions, jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{"spine.session." + session + ".telemetry"}})
	if err != nil {
		f.t.Fatal(err)
	}
	var out []string
	for range f.onLog(session) {
		m, err := c.Next()
		if err != nil {
			f.t.Fatal(err)
		}
		out = append(out, string(m.Data()))
	}
	return out
}

// Every hook Claude Code posted is answered 200 {}; the ones spine records
// are on the log in the session's OTLP events' session, the prompt as its
// digest only.
func TestHookDoorTakesTheCaptures(t *testing.T) {
	f := newFixture(t)
	alice := f.token("acme", "alice")
	for _, ev := range []string{"UserPromptSubmit", "PreToolUse", "PostToolUse", "PostToolUseFailure", "Stop", "SubagentStop", "SessionEnd"} {
		if status, body := f.do("POST", "/v1/hooks/claude-code", alice, hookBody(t, ev)); status != http.StatusOK || string(body) != "{}\n" {
			t.Fatalf("%s: %d %q", ev, status, body)
		}
	}
	logged := f.logged(hookSession)
	if len(logged) != 5 || f.holder(hookSession) != "acme/alice" {
		t.Fatalf("%d hooks on the log, held by %q; want the 5 spine records, alice's", len(logged), f.holder(hookSession))
	}
	var kinds []string
	for _, m := range logged {
		var e streams.Envelope
		if err := json.Unmarshal([]byte(m), &e); err != nil {
			t.Fatal(err)
		}
		kinds = append(kinds, e.Telemetry.Kind+"/"+e.Telemetry.Phase)
		if strings.Contains(m, "write, then cat a note") {
			t.Fatalf("the prompt's text is on the log: %s", m)
		}
	}
	if strings.Join(kinds, " ") != "prompt/ tool/pre tool/post tool/post end/" {
		t.Fatalf("kinds on the log: %v", kinds)
	}
	if status, body := f.do("POST", "/v1/hooks/claude-code", alice, []byte(`{"session_id":`)); status != http.StatusBadRequest {
		t.Fatalf("a malformed hook: %d %s", status, body)
	}
	if status, _ := f.do("POST", "/v1/hooks/claude-code", "", hookBody(t, "SessionEnd")); status != http.StatusUnauthorized {
		t.Fatalf("a hook without a token: %d", status)
	}
}

// A secret in a hook's command and output is redacted before it is
// stored: the message on the log holds [REDACTED] in its place, and
// neither the log nor spine's own log (at debug level) holds the secret.
func TestHookSecretIsRedactedBeforeItIsStored(t *testing.T) {
	_, dbURL := pgtest.New(t)
	logs := &spinetest.Buffer{}
	n, err := node.Start(context.Background(), config.Config{DatabaseURL: dbURL, NATSListen: "off", HTTPAddr: "127.0.0.1:0",
		DataDir: t.TempDir(), TokenSecret: secret, Replicas: 1},
		slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})), &node.Options{BatchSize: 50})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(n.Stop)
	f := &fixture{t: t, n: n, base: "http://" + n.HTTPAddr()}
	sh := secretstest.Shapes[0]
	var hook map[string]any
	_ = json.Unmarshal(hookBody(t, "PostToolUse"), &hook)
	hook["tool_name"] = "Bash"
	hook["tool_input"] = map[string]string{"command": sh.Text}
	hook["tool_response"] = map[string]string{"stdout": secretstest.All()}
	body, _ := json.Marshal(hook)
	if status, answer := f.do("POST", "/v1/hooks/claude-code", f.token("acme", "alice"), body); status != http.StatusOK {
		t.Fatalf("hook: %d %s", status, answer)
	}
	stored := f.logged(hookSession)
	if len(stored) != 1 || !strings.Contains(stored[0], "[REDACTED]") {
		t.Fatalf("on the log: %q", stored)
	}
	for _, shape := range secretstest.Shapes {
		if strings.Contains(stored[0], shape.Secret) || strings.Contains(logs.String(), shape.Secret) {
			t.Fatalf("a secret reached the log (%s) or spine's log", shape.Secret)
		}
	}
	var e streams.Envelope
	if err := json.Unmarshal([]byte(stored[0]), &e); err != nil || !bytes.Contains([]byte(e.Telemetry.Event.Command), []byte("[REDACTED]")) {
		t.Fatalf("the command as stored: %+v (%v)", e.Telemetry, err)
	}
}
