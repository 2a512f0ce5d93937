package telemetry_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spinehq/spine/internal/apprig"
	"github.com/spinehq/spine/internal/fakemodel"
)

var capture = flag.Bool("capture", false,
	"run the real Claude Code and Codex with telemetry on and rewrite ../testdata/otlp and ../testdata/hooks from what they send")

// Where the captures go: the repository's testdata, shared by every
// package that reads what the apps send.
var (
	otlpDir  = filepath.Join("..", "testdata", "otlp")
	hooksDir = filepath.Join("..", "testdata", "hooks")
)

// posted is one request the capture server took, with the file it was
// written to.
type posted struct {
	File string `json:"file"`
	apprig.Posted
}

// requests is what sink took, not yet named.
func requests(sink *apprig.Sink) []posted {
	var out []posted
	for _, p := range sink.Requests() {
		out = append(out, posted{Posted: p})
	}
	return out
}

// TestCapture rewrites the captures (see ../testdata/otlp/README.md). It
// runs only with -capture, and needs the real apps (make real-apps).
func TestCapture(t *testing.T) {
	if !*capture {
		t.Skip("rewrites the captures: run with -capture")
	}
	var otlp, hooks []posted
	for _, c := range claudeCases {
		t.Run(c.name, func(t *testing.T) {
			got := captureClaude(t, c)
			otlp = append(otlp, writeOTLP(t, c.name, got, c.signals)...)
			if c.hooks {
				hooks = writeHooks(t, got)
			}
		})
	}
	for _, c := range codexCases {
		t.Run(c.name, func(t *testing.T) {
			otlp = append(otlp, writeOTLP(t, c.name, captureCodex(t, c), c.signals)...)
		})
	}
	writeManifest(t, otlpDir, otlp)
	writeManifest(t, hooksDir, hooks)
}

// claudeCase is one way of switching Claude Code's telemetry on.
type claudeCase struct {
	name     string   // the captures' prefix
	protocol string   // OTEL_EXPORTER_OTLP_PROTOCOL
	more     []string // more variables
	// settings puts the variables in settings.json's "env" (as managed
	// settings do) instead of the process's environment, and turns
	// non-essential traffic on (the session-title request).
	settings bool
	hooks    bool     // keep its hook requests
	signals  []string // the signals kept
}

var claudeCases = []claudeCase{
	{name: "claude-code-json", protocol: "http/json", hooks: true, signals: []string{"logs", "metrics"}},
	{name: "claude-code-protobuf", protocol: "http/protobuf", signals: []string{"logs", "metrics"}},
	{name: "claude-code-json-gzip", protocol: "http/json", more: []string{"OTEL_EXPORTER_OTLP_COMPRESSION=gzip"},
		settings: true, signals: []string{"logs", "metrics"}},
}

// captureClaude runs Claude Code once (claudeTurns) and returns what it
// posted.
func captureClaude(t *testing.T, c claudeCase) []posted {
	sink := apprig.StartSink(t)
	srv := fakemodel.Start(t)
	var env []string
	if c.settings {
		env = append(env, "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=")
	}
	app := apprig.NewClaude(t, srv, &apprig.ClaudeOptions{Env: env,
		Telemetry: &apprig.ClaudeTelemetry{URL: sink.URL(), Protocol: c.protocol, Token: "x", InSettings: c.settings, Env: c.more},
		Hooks:     &apprig.ClaudeHooks{URL: sink.URL(), Token: "hooktoken", Events: hookEvents}})
	claudeTurns(srv, app.Dir)
	run := app.Run("write, then cat a note", nil)
	if run.ExitCode != 0 {
		t.Fatalf("claude exit %d\nstderr: %s", run.ExitCode, run.Stderr)
	}
	return requests(sink)
}

// claudeTurns script a run that writes a file, runs a command that
// outlasts a log export interval (so logs come in more than one request),
// runs one that fails, and delegates to a subagent.
func claudeTurns(srv *fakemodel.Server, dir string) {
	u := func(n int64) fakemodel.Usage {
		return fakemodel.Usage{Input: 3 + n, Output: 40 * n, CacheRead: 12000 * n, CacheWrite5m: 900 + n, CacheWrite1h: 50}
	}
	main := func(n int64, blocks ...fakemodel.Block) fakemodel.Turn {
		return fakemodel.Turn{Blocks: blocks, Usage: u(n), Match: conversation}
	}
	srv.Anthropic(
		main(1, fakemodel.Text("writing"),
			fakemodel.Tool("Write", map[string]any{"file_path": filepath.Join(dir, "note.txt"), "content": "rig\n"})),
		main(2, fakemodel.Tool("Bash", map[string]any{"command": "sleep 1.2; cat note.txt", "description": "show the note"})),
		main(3, fakemodel.Tool("Bash", map[string]any{"command": "exit 3", "description": "fail"})),
		main(4, fakemodel.Tool("Agent", map[string]any{"description": "look", "prompt": "say sub", "subagent_type": "general-purpose"})),
		fakemodel.Turn{Blocks: []fakemodel.Block{fakemodel.Text("sub done")}, Usage: u(5), Match: fakemodel.Subagent},
		main(6, fakemodel.Text("done")),
	)
}

// conversation matches the main thread's requests but the session-title
// request Claude Code makes when non-essential traffic is on (it declares
// no tools), which gets the fake model's default answer.
func conversation(body []byte) bool {
	return fakemodel.MainThread(body) && !bytes.Contains(body, []byte(`"tools":[]`))
}

// The hook events configured: the doors' (apprig.HookEvents) and
// SessionStart, to show it is never posted.
var hookEvents = append([]string{"SessionStart"}, apprig.HookEvents...)

// codexCase is one [otel] configuration of Codex.
type codexCase struct {
	name     string // the captures' prefix
	protocol string // otlp-http's protocol: "json" or "binary"
	chatgpt  bool   // signed in with ChatGPT instead of an API key
	// token is the bearer as config.toml writes it; ${SPINE_OTLP_TOKEN}
	// shows whether Codex expands variables there.
	token   string
	traces  bool // a trace_exporter too (its spans' ids then show in the logs); traces are not kept
	signals []string
}

var codexCases = []codexCase{
	{name: "codex-json", protocol: "json", token: "x", signals: []string{"logs", "metrics"}},
	{name: "codex-protobuf", protocol: "binary", token: "x", signals: []string{"logs", "metrics"}},
	{name: "codex-json-chatgpt", protocol: "json", chatgpt: true, token: "${SPINE_OTLP_TOKEN}", traces: true,
		signals: []string{"logs"}},
}

// captureCodex runs codex exec once, a command that outlasts a log
// export, one that fails, and a closing text, and returns what it posted.
func captureCodex(t *testing.T, c codexCase) []posted {
	sink := apprig.StartSink(t)
	srv := fakemodel.Start(t)
	srv.OpenAI(
		fakemodel.Turn{Blocks: []fakemodel.Block{fakemodel.Thinking("look first"), fakemodel.Text("listing"),
			fakemodel.Tool("exec_command", map[string]any{"cmd": "sleep 1.2; echo hi"})},
			Usage: fakemodel.Usage{Input: 900, CacheRead: 3000, Output: 40, Reasoning: 12}},
		fakemodel.Turn{Blocks: []fakemodel.Block{fakemodel.Tool("exec_command", map[string]any{"cmd": "exit 3"})},
			Usage: fakemodel.Usage{Input: 100, CacheRead: 3900, Output: 30}},
		fakemodel.Turn{Blocks: []fakemodel.Block{fakemodel.Text("done")},
			Usage: fakemodel.Usage{Input: 50, CacheRead: 4000, Output: 5}},
	)
	app := apprig.NewCodex(t, srv, &apprig.CodexOptions{ChatGPT: c.chatgpt, Env: []string{"SPINE_OTLP_TOKEN=fromenv"},
		Telemetry: &apprig.CodexTelemetry{URL: sink.URL(), Protocol: c.protocol, Token: c.token, Traces: c.traces}})
	run := app.Exec(t, "say hi")
	if run.ExitCode != 0 {
		t.Fatalf("codex exit %d\nstderr: %s", run.ExitCode, run.Stderr)
	}
	return requests(sink)
}

// writeOTLP writes a case's OTLP bodies of the kept signals as
// <name>-<signal>-<N>.<json|pb>[.gz], N counting from 1 in arrival order,
// after removing the case's earlier captures, and returns them named.
func writeOTLP(t *testing.T, name string, got []posted, signals []string) []posted {
	old, _ := filepath.Glob(filepath.Join(otlpDir, name+"-*"))
	for _, p := range old {
		if err := os.Remove(p); err != nil {
			t.Fatal(err)
		}
	}
	var out []posted
	n := map[string]int{}
	for _, p := range got {
		signal := strings.TrimPrefix(p.Path, "/otlp/v1/")
		if !strings.HasPrefix(p.Path, "/otlp/v1/") || !contains(signals, signal) {
			continue
		}
		n[signal]++
		p.File = fmt.Sprintf("%s-%s-%d%s", name, signal, n[signal], extension(p))
		writeBody(t, otlpDir, p)
		out = append(out, p)
	}
	for _, s := range signals {
		if n[s] == 0 {
			t.Errorf("%s posted no %s", name, s)
		}
	}
	return out
}

// writeHooks writes the first hook request of each event as
// claude-code-<event>.json and returns them named.
func writeHooks(t *testing.T, got []posted) []posted {
	var out []posted
	seen := map[string]bool{}
	for _, p := range got {
		var h struct {
			Event string `json:"hook_event_name"`
		}
		if p.Path != "/v1/hooks/claude-code" || json.Unmarshal(p.Body, &h) != nil || seen[h.Event] {
			continue
		}
		seen[h.Event] = true
		p.File = "claude-code-" + h.Event + ".json"
		writeBody(t, hooksDir, p)
		out = append(out, p)
	}
	return out
}

func contains(list []string, s string) bool {
	for _, e := range list {
		if e == s {
			return true
		}
	}
	return false
}

func extension(p posted) string {
	ext := ".json"
	if strings.Contains(p.ContentType, "protobuf") {
		ext = ".pb"
	}
	if p.ContentEncoding == "gzip" {
		ext += ".gz"
	}
	return ext
}

func writeBody(t *testing.T, dir string, p posted) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, p.File), p.Body, 0o644); err != nil {
		t.Fatal(err)
	}
}

// writeManifest writes dir/requests.json: how each capture arrived.
func writeManifest(t *testing.T, dir string, got []posted) {
	b, err := json.MarshalIndent(got, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "requests.json"), append(b, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
}
