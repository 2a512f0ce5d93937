// Package apprig runs the real Claude Code and Codex binaries for tests,
// against a fakemodel server, in a temporary home, and hands back what
// they wrote. The binaries are installed pinned by `make real-apps`; a
// test that needs one skips, naming that target, where it is not.
//
// The apps' own telemetry is switched on as docs/telemetry.md says:
// ClaudeOptions.Telemetry (the OTLP exporters) and ClaudeOptions.Hooks
// (http hooks), CodexOptions.Telemetry ([otel]); a Sink stands in for
// the endpoint where a test looks at what the apps post.
package apprig

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// Pinned versions, as `make real-apps` installs them (the Makefile's
// CLAUDE_CODE_VERSION and CODEX_VERSION).
const (
	ClaudeVersion = "2.1.197"
	CodexVersion  = "0.171.0"
)

// binary finds an app's binary: $env, else rel under the repository's
// bin/; it skips the test, naming the make target, where there is none.
func binary(tb testing.TB, env, rel string) string {
	tb.Helper()
	if p := os.Getenv(env); p != "" {
		if _, err := os.Stat(p); err != nil {
			tb.Fatalf("%s=%s: %v", env, p, err)
		}
		return p
	}
	p := filepath.Join(RepoRoot(tb), "bin", rel)
	if _, err := os.Stat(p); err != nil {
		tb.Skipf("%s is not installed: run `make real-apps` (or set %s)", rel, env)
	}
	return p
}

// RepoRoot is the module's root directory.
func RepoRoot(tb testing.TB) string {
	tb.Helper()
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		tb.Fatal("apprig: no caller information")
	}
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}

// Where `make real-apps` puts the binaries, under bin/ (the Makefile's
// CLAUDE_BIN and CODEX_BIN).
var (
	claudeRel = filepath.Join("claude-code-"+ClaudeVersion,
		"node_modules", "@anthropic-ai", "claude-code-linux-x64", "claude")
	codexRel = filepath.Join("codex-"+CodexVersion,
		"node_modules", "@openai", "codex-linux-x64", "vendor", "x86_64-unknown-linux-musl", "bin", "codex")
)

// ClaudeBinary is the Claude Code binary ($SPINE_CLAUDE_BIN, else bin/).
func ClaudeBinary(tb testing.TB) string { return binary(tb, "SPINE_CLAUDE_BIN", claudeRel) }

// CodexBinary is the Codex binary ($SPINE_CODEX_BIN, else bin/).
func CodexBinary(tb testing.TB) string { return binary(tb, "SPINE_CODEX_BIN", codexRel) }
