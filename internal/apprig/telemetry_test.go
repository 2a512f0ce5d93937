package apprig_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/spinehq/spine/internal/apprig"
	"github.com/spinehq/spine/internal/fakemodel"
)

// posts counts a sink's requests by path, failing on one whose
// Authorization is not want's or whose Content-Type does not contain
// its path's.
func posts(t *testing.T, got []apprig.Posted, auth map[string]string, contentType map[string]string) map[string]int {
	t.Helper()
	n := map[string]int{}
	for _, p := range got {
		n[p.Path]++
		if want, ok := auth[p.Path]; !ok || p.Authorization != want {
			t.Errorf("%s %s: Authorization %q, want %q", p.Method, p.Path, p.Authorization, want)
		}
		if !strings.Contains(p.ContentType, contentType[p.Path]) {
			t.Errorf("%s: Content-Type %q, want %s", p.Path, p.ContentType, contentType[p.Path])
		}
	}
	return n
}

// Claude Code with the rig's telemetry and hooks on posts its logs and
// metrics to URL/otlp/v1/… in the protocol asked, with the bearer, and
// every configured hook that fires to URL/v1/hooks/claude-code with the
// hook token from allowedEnvVars.
func TestClaudeTelemetryAndHooks(t *testing.T) {
	sink := apprig.StartSink(t)
	srv := fakemodel.Start(t)
	c := apprig.NewClaude(t, srv, &apprig.ClaudeOptions{
		Telemetry: &apprig.ClaudeTelemetry{URL: sink.URL(), Protocol: "http/protobuf", Token: "otlptok"},
		Hooks:     &apprig.ClaudeHooks{URL: sink.URL(), Token: "hooktok"}})
	srv.Anthropic(
		mainTurn(usage(1), fakemodel.Tool("Bash", map[string]any{"command": "echo hi", "description": "greet"})),
		mainTurn(usage(2), fakemodel.Text("done")),
	)
	checkRun(t, srv, c.Run("greet", nil), 2)
	n := posts(t, sink.Requests(),
		map[string]string{"/otlp/v1/logs": "Bearer otlptok", "/otlp/v1/metrics": "Bearer otlptok", "/v1/hooks/claude-code": "Bearer hooktok"},
		map[string]string{"/otlp/v1/logs": "application/x-protobuf", "/otlp/v1/metrics": "application/x-protobuf", "/v1/hooks/claude-code": "application/json"})
	if n["/otlp/v1/logs"] == 0 || n["/otlp/v1/metrics"] == 0 {
		t.Errorf("no logs or metrics: %v", n)
	}
	var events []string
	for _, p := range sink.Requests() {
		var h struct {
			Event string `json:"hook_event_name"`
		}
		if p.Path == "/v1/hooks/claude-code" && json.Unmarshal(p.Body, &h) == nil && !slices.Contains(events, h.Event) {
			events = append(events, h.Event)
		}
	}
	want := []string{"UserPromptSubmit", "PreToolUse", "PostToolUse", "Stop", "SessionEnd"}
	if !slices.Equal(events, want) {
		t.Errorf("hook events %v, want %v", events, want)
	}
}

// Codex with the rig's [otel] posts its logs and metrics to the full paths
// configured, in the protocol asked, with the bearer written in the file.
func TestCodexTelemetry(t *testing.T) {
	sink := apprig.StartSink(t)
	srv := fakemodel.Start(t)
	srv.OpenAI(fakemodel.Turn{Blocks: []fakemodel.Block{fakemodel.Text("hi")}, Usage: fakemodel.Usage{Input: 90, CacheRead: 300, Output: 4}})
	c := apprig.NewCodex(t, srv, &apprig.CodexOptions{
		Telemetry: &apprig.CodexTelemetry{URL: sink.URL(), Protocol: "binary", Token: "otlptok"}})
	if run := c.Exec(t, "say hi"); run.ExitCode != 0 {
		t.Fatalf("codex exit %d\n%s", run.ExitCode, run.Stderr)
	}
	n := posts(t, sink.Requests(),
		map[string]string{"/otlp/v1/logs": "Bearer otlptok", "/otlp/v1/metrics": "Bearer otlptok"},
		map[string]string{"/otlp/v1/logs": "application/x-protobuf", "/otlp/v1/metrics": "application/x-protobuf"})
	if n["/otlp/v1/logs"] == 0 || n["/otlp/v1/metrics"] == 0 {
		t.Errorf("no logs or metrics: %v", n)
	}
}
