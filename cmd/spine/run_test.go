package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// spine run adds the flags that make the app headless with machine-readable
// output where the user left them out, keeps the user's own, and refuses
// an output format it cannot read.
func TestRunAppArgs(t *testing.T) {
	cases := []struct {
		app  string
		in   []string
		want []string
	}{
		{"claude-code", []string{"hi"}, []string{"-p", "hi", "--output-format", "stream-json", "--verbose"}},
		{"claude-code", []string{"-p", "hi", "--verbose", "--output-format=stream-json"},
			[]string{"-p", "hi", "--verbose", "--output-format=stream-json"}},
		{"codex", []string{"hi"}, []string{"exec", "--json", "hi"}},
		{"codex", []string{"exec", "resume", "T", "more"}, []string{"exec", "--json", "resume", "T", "more"}},
	}
	for _, tc := range cases {
		got, _, err := appArgs(tc.app, tc.in)
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("%s %q: %q, %v; want %q", tc.app, tc.in, got, err, tc.want)
		}
	}
	for _, bad := range [][]string{{"-p", "hi", "--output-format", "text"}, {"-p", "--output-format=json"}} {
		if _, _, err := appArgs("claude-code", bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	if _, _, err := appArgs("cursor", nil); err == nil {
		t.Error("an unknown app accepted")
	}
}

// spine run exits as the app did, without a message of its own.
func TestRunExitsAsTheApp(t *testing.T) {
	if got := exitCode(appExit(3)); got != 3 {
		t.Fatalf("exit code %d, want the app's 3", got)
	}
	if got := exitCode(fmt.Errorf("wrapped: %w", appExit(137))); got != 137 {
		t.Fatalf("exit code %d, want the app's 137", got)
	}
}

// --quiet and --json together are a usage error (exit 2): one shows
// nothing, the other every envelope. Before, --quiet won silently.
func TestRunQuietJSONRefused(t *testing.T) {
	started := filepath.Join(t.TempDir(), "started")
	_, err := capture(t, "run", "--quiet", "--json", "--token", "tok", "--bin", script(t, "echo > "+started), "--", "hi")
	if exitCode(err) != 2 || !strings.Contains(err.Error(), "--quiet") {
		t.Fatalf("--quiet --json: %v (exit %d), want a usage error", err, exitCode(err))
	}
	if _, err := os.Stat(started); err == nil {
		t.Fatal("the app started")
	}
}
