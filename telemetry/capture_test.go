package telemetry_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
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

// posted is one request the capture server took.
type posted struct {
	File            string `json:"file"`
	Method          string `json:"method"`
	Path            string `json:"path"`
	ContentType     string `json:"contentType"`
	ContentEncoding string `json:"contentEncoding,omitempty"`
	// ContentLength is -1 for a chunked body (Transfer-Encoding).
	ContentLength    int64    `json:"contentLength"`
	TransferEncoding []string `json:"transferEncoding,omitempty"`
	UserAgent        string   `json:"userAgent"`
	Authorization    string   `json:"authorization"`
	body             []byte
}

// recorder is the capture server: it keeps every request and answers
// with OTLP's empty success (an empty message in the request's format).
type recorder struct {
	url string
	mu  sync.Mutex
	got []posted
}

func startRecorder(tb testing.TB) *recorder {
	tb.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	r := &recorder{url: "http://" + l.Addr().String()}
	srv := &http.Server{Handler: r}
	go srv.Serve(l) //nolint:errcheck // ends with Close
	tb.Cleanup(func() { srv.Close() })
	return r
}

func (r *recorder) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	h := req.Header
	r.mu.Lock()
	r.got = append(r.got, posted{Method: req.Method, Path: req.URL.Path, ContentType: h.Get("Content-Type"),
		ContentEncoding: h.Get("Content-Encoding"), ContentLength: req.ContentLength, TransferEncoding: req.TransferEncoding,
		UserAgent: h.Get("User-Agent"), Authorization: h.Get("Authorization"), body: body})
	r.mu.Unlock()
	if strings.Contains(h.Get("Content-Type"), "protobuf") {
		w.Header().Set("Content-Type", "application/x-protobuf")
		return
	}
	w.Header().Set("Content-Type", "application/json")
	io.WriteString(w, "{}") //nolint:errcheck // the app may be gone
}

// requests is every request taken so far, in arrival order.
func (r *recorder) requests() []posted {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]posted(nil), r.got...)
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

// otelEnv is what switches Claude Code's telemetry on, to url.
func (c claudeCase) otelEnv(url string) []string {
	return append([]string{
		"CLAUDE_CODE_ENABLE_TELEMETRY=1",
		"OTEL_LOGS_EXPORTER=otlp",
		"OTEL_METRICS_EXPORTER=otlp",
		"OTEL_EXPORTER_OTLP_PROTOCOL=" + c.protocol,
		"OTEL_EXPORTER_OTLP_ENDPOINT=" + url + "/otlp",
		"OTEL_EXPORTER_OTLP_HEADERS=Authorization=Bearer x",
		"OTEL_LOGS_EXPORT_INTERVAL=500",
		"OTEL_METRIC_EXPORT_INTERVAL=1000",
	}, c.more...)
}

// captureClaude runs Claude Code once (claudeTurns) and returns what it
// posted.
func captureClaude(t *testing.T, c claudeCase) []posted {
	rec := startRecorder(t)
	srv := fakemodel.Start(t)
	env := []string{"SPINE_HOOK_TOKEN=hooktoken"}
	settingsEnv := map[string]string{}
	if c.settings {
		env = append(env, "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=")
		for _, kv := range c.otelEnv(rec.url) {
			k, v, _ := strings.Cut(kv, "=")
			settingsEnv[k] = v
		}
	} else {
		env = append(env, c.otelEnv(rec.url)...)
	}
	app := apprig.NewClaude(t, srv, &apprig.ClaudeOptions{Env: env})
	writeClaudeSettings(t, app.Home, rec.url, settingsEnv)
	claudeTurns(srv, app.Dir)
	run := app.Run("write, then cat a note", nil)
	if run.ExitCode != 0 {
		t.Fatalf("claude exit %d\nstderr: %s", run.ExitCode, run.Stderr)
	}
	return rec.requests()
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

// The hook events configured, each an http hook posting to
// /v1/hooks/claude-code. SessionStart is there to show it is never posted.
var hookEvents = []string{"SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse", "PostToolUseFailure",
	"Stop", "SubagentStop", "SessionEnd"}

// writeClaudeSettings writes $HOME/.claude/settings.json: the http hooks,
// their bearer from $SPINE_HOOK_TOKEN, and env (none when empty).
func writeClaudeSettings(t *testing.T, home, url string, env map[string]string) {
	hook := []map[string]any{{"matcher": "*", "hooks": []map[string]any{{
		"type": "http", "url": url + "/v1/hooks/claude-code",
		"headers":        map[string]string{"Authorization": "Bearer $SPINE_HOOK_TOKEN"},
		"allowedEnvVars": []string{"SPINE_HOOK_TOKEN"},
	}}}}
	hooks := map[string]any{}
	for _, e := range hookEvents {
		hooks[e] = hook
	}
	settings := map[string]any{"hooks": hooks}
	if len(env) > 0 {
		settings["env"] = env
	}
	b, err := json.MarshalIndent(settings, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(home, ".claude"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, ".claude", "settings.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// codexCase is one [otel] configuration of Codex.
type codexCase struct {
	name     string // the captures' prefix
	protocol string // otlp-http's protocol: "json" or "binary"
	chatgpt  bool   // signed in with ChatGPT instead of an API key
	// auth is the Authorization header as config.toml writes it;
	// ${SPINE_OTLP_TOKEN} shows whether Codex expands variables there.
	auth    string
	traces  bool // a trace_exporter too (its spans' ids then show in the logs); traces are not kept
	signals []string
}

var codexCases = []codexCase{
	{name: "codex-json", protocol: "json", auth: "Bearer x", signals: []string{"logs", "metrics"}},
	{name: "codex-protobuf", protocol: "binary", auth: "Bearer x", signals: []string{"logs", "metrics"}},
	{name: "codex-json-chatgpt", protocol: "json", chatgpt: true, auth: "Bearer ${SPINE_OTLP_TOKEN}", traces: true,
		signals: []string{"logs"}},
}

// captureCodex runs codex exec once, a command that outlasts a log
// export, one that fails, and a closing text, and returns what it posted.
func captureCodex(t *testing.T, c codexCase) []posted {
	rec := startRecorder(t)
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
	app := apprig.NewCodex(t, srv, &apprig.CodexOptions{ChatGPT: c.chatgpt, Env: []string{"SPINE_OTLP_TOKEN=fromenv"}})
	appendFile(t, filepath.Join(app.Home, "config.toml"), c.otel(rec.url))
	run := app.Exec(t, "say hi")
	if run.ExitCode != 0 {
		t.Fatalf("codex exit %d\nstderr: %s", run.ExitCode, run.Stderr)
	}
	return rec.requests()
}

// otel is the case's [otel] table, logs and metrics to url.
func (c codexCase) otel(url string) string {
	exporter := func(signal string) string {
		return fmt.Sprintf(`{ otlp-http = { endpoint = %q, protocol = %q, headers = { "Authorization" = %q } } }`,
			url+"/otlp/v1/"+signal, c.protocol, c.auth)
	}
	otel := fmt.Sprintf("\n[otel]\nenvironment = \"test\"\nexporter = %s\nmetrics_exporter = %s\n",
		exporter("logs"), exporter("metrics"))
	if c.traces {
		otel += "trace_exporter = " + exporter("traces") + "\n"
	}
	return otel
}

func appendFile(t *testing.T, path, text string) {
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(text); err != nil {
		t.Fatal(err)
	}
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
		if p.Path != "/v1/hooks/claude-code" || json.Unmarshal(p.body, &h) != nil || seen[h.Event] {
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
	if err := os.WriteFile(filepath.Join(dir, p.File), p.body, 0o644); err != nil {
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
