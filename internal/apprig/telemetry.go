package apprig

import (
	"cmp"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The apps' own telemetry, switched on as docs/telemetry.md ("Switching it
// on") says: Claude Code's OTLP exporters and http hooks, Codex's [otel].

// ClaudeTelemetry switches Claude Code's OTLP logs and metrics exporters
// on (ClaudeOptions.Telemetry).
type ClaudeTelemetry struct {
	// URL is the endpoint's base (spine's URL): the exporters post to
	// URL/otlp/v1/logs and URL/otlp/v1/metrics.
	URL string
	// Protocol is OTEL_EXPORTER_OTLP_PROTOCOL; "" is "http/json" (or
	// "http/protobuf").
	Protocol string
	// Token is the bearer sent in OTEL_EXPORTER_OTLP_HEADERS; "" sends no
	// Authorization header.
	Token string
	// InSettings puts the variables in settings.json's "env" object, as
	// managed settings carry them, instead of the process's environment.
	InSettings bool
	// Env is more variables of the same kind (e.g.
	// OTEL_EXPORTER_OTLP_COMPRESSION=gzip), put where the others go.
	Env []string
}

// Export intervals short enough that a run's logs arrive in more than one
// request and a test waits well under a second for the last (Claude Code's
// defaults: 5 s and 60 s).
const (
	ClaudeLogsInterval    = "500"
	ClaudeMetricsInterval = "1000"
)

// env is what switches the exporters on.
func (t *ClaudeTelemetry) env() []string {
	env := []string{
		"CLAUDE_CODE_ENABLE_TELEMETRY=1",
		"OTEL_LOGS_EXPORTER=otlp",
		"OTEL_METRICS_EXPORTER=otlp",
		"OTEL_EXPORTER_OTLP_PROTOCOL=" + cmp.Or(t.Protocol, "http/json"),
		"OTEL_EXPORTER_OTLP_ENDPOINT=" + t.URL + "/otlp",
		"OTEL_LOGS_EXPORT_INTERVAL=" + ClaudeLogsInterval,
		"OTEL_METRIC_EXPORT_INTERVAL=" + ClaudeMetricsInterval,
	}
	if t.Token != "" {
		env = append(env, "OTEL_EXPORTER_OTLP_HEADERS=Authorization=Bearer "+t.Token)
	}
	return append(env, t.Env...)
}

// ClaudeHooks configures Claude Code's "type": "http" hooks
// (ClaudeOptions.Hooks).
type ClaudeHooks struct {
	// URL is spine's base URL: every hook posts to URL/v1/hooks/claude-code.
	URL string
	// Token is the bearer: the run's $SPINE_HOOK_TOKEN, which each hook
	// names in its header and lists in allowedEnvVars; "" sends the
	// header empty.
	Token string
	// Events are the hook events configured; nil is HookEvents.
	Events []string
}

// HookEvents are the events a hook door takes (docs/telemetry.md).
// SessionStart is not one: Claude Code never posts it over HTTP.
var HookEvents = []string{"UserPromptSubmit", "PreToolUse", "PostToolUse", "PostToolUseFailure",
	"Stop", "SubagentStop", "SessionEnd"}

// HookTokenEnv is the variable the hooks' Authorization header names.
const HookTokenEnv = "SPINE_HOOK_TOKEN"

// settings is the hooks' part of settings.json.
func (h *ClaudeHooks) settings() map[string]any {
	hook := []map[string]any{{"matcher": "*", "hooks": []map[string]any{{
		"type": "http", "url": h.URL + "/v1/hooks/claude-code",
		"headers":        map[string]string{"Authorization": "Bearer $" + HookTokenEnv},
		"allowedEnvVars": []string{HookTokenEnv},
	}}}}
	events := h.Events
	if events == nil {
		events = HookEvents
	}
	hooks := map[string]any{}
	for _, e := range events {
		hooks[e] = hook
	}
	return hooks
}

// telemetryEnv is what the run's environment gets from o: the token the
// hooks read, and the exporters' variables unless they go in settings.
func telemetryEnv(o *ClaudeOptions) []string {
	var env []string
	if o.Hooks != nil {
		env = append(env, HookTokenEnv+"="+o.Hooks.Token)
	}
	if t := o.Telemetry; t != nil && !t.InSettings {
		env = append(env, t.env()...)
	}
	return env
}

// writeSettings writes $HOME/.claude/settings.json with o's hooks and
// settings-borne telemetry; nothing when o has neither.
func writeSettings(tb testing.TB, home string, o *ClaudeOptions) {
	tb.Helper()
	settings := map[string]any{}
	if o.Hooks != nil {
		settings["hooks"] = o.Hooks.settings()
	}
	if t := o.Telemetry; t != nil && t.InSettings {
		env := map[string]string{}
		for _, kv := range t.env() {
			k, v, _ := strings.Cut(kv, "=")
			env[k] = v
		}
		settings["env"] = env
	}
	if len(settings) == 0 {
		return
	}
	b, err := json.MarshalIndent(settings, "", "  ")
	if err != nil {
		tb.Fatal(err)
	}
	dir := filepath.Join(home, ".claude")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "settings.json"), b, 0o600); err != nil {
		tb.Fatal(err)
	}
}

// CodexTelemetry is config.toml's [otel] (CodexOptions.Telemetry).
type CodexTelemetry struct {
	// URL is the endpoint's base (spine's URL): logs go to
	// URL/otlp/v1/logs, metrics to URL/otlp/v1/metrics (Codex posts to
	// each as written, appending nothing).
	URL string
	// Protocol is otlp-http's protocol; "" is "json" (or "binary").
	Protocol string
	// Token is the bearer, written into config.toml: Codex does not expand
	// variables in its headers, so "${VAR}" is sent as written.
	Token string
	// Traces adds a trace_exporter to URL/otlp/v1/traces (log records
	// then carry trace ids); spine reads no traces.
	Traces bool
}

// toml is the [otel] table.
func (t *CodexTelemetry) toml() string {
	exporter := func(signal string) string {
		return fmt.Sprintf(`{ otlp-http = { endpoint = %q, protocol = %q, headers = { "Authorization" = %q } } }`,
			t.URL+"/otlp/v1/"+signal, cmp.Or(t.Protocol, "json"), "Bearer "+t.Token)
	}
	otel := fmt.Sprintf("\n[otel]\nenvironment = \"test\"\nexporter = %s\nmetrics_exporter = %s\n",
		exporter("logs"), exporter("metrics"))
	if t.Traces {
		otel += "trace_exporter = " + exporter("traces") + "\n"
	}
	return otel
}
