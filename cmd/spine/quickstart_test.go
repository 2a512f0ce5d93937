package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/spinehq/spine/auth"
	"github.com/spinehq/spine/internal/config"
	"github.com/spinehq/spine/internal/spinetest"
)

func TestMain(m *testing.M) { spinetest.Main(m, removeBuiltSpine) }

// capture runs a spine command and returns what it printed.
func capture(t *testing.T, args ...string) (string, error) {
	t.Helper()
	var buf bytes.Buffer
	old := stdout
	stdout = &buf
	defer func() { stdout = old }()
	err := run(context.Background(), args)
	return buf.String(), err
}

// The README's quickstart, step by step, against a real node.
func TestQuickstart(t *testing.T) {
	_, caughtUp := testNode(t)

	out, err := capture(t, "publish", "../../testdata/quickstart/live.jsonl")
	if err != nil || !strings.Contains(out, "6 sent, 6 accepted, 0 refused") {
		t.Fatalf("publish live: %v\n%s", err, out)
	}
	caughtUp()
	out, err = capture(t, "read", "transcript", "qs-1")
	if err != nil || !strings.Contains(out, "I'll list the files") || !strings.Contains(out, "Gleam project") {
		t.Fatalf("live transcript: %v\n%s", err, out)
	}
	out, _ = capture(t, "read", "session", "qs-1")
	if !strings.Contains(out, "running") {
		t.Fatalf("live session:\n%s", out)
	}

	if out, err = capture(t, "publish", "--json", "../../testdata/quickstart/end.jsonl"); err != nil {
		t.Fatalf("publish end: %v\n%s", err, out)
	}
	caughtUp()
	out, err = capture(t, "read", "session", "qs-1", "--json")
	var sess map[string]any
	if err != nil || json.Unmarshal([]byte(out), &sess) != nil {
		t.Fatalf("session json: %v\n%s", err, out)
	}
	if sess["status"] != "done" || sess["recordedSteps"] != 3.0 || sess["model"] != "claude-opus-4-5-20251101" ||
		!strings.HasPrefix(sess["transcriptFileId"].(string), "blake3:") {
		t.Fatalf("ended session = %v", sess)
	}
	out, _ = capture(t, "read", "transcript", "qs-1", "--follow")
	if !strings.Contains(out, "Here are the files") || strings.Contains(out, "EXAMPLEEXAMPLE") {
		t.Fatalf("final transcript:\n%s", out)
	}
	out, err = capture(t, "read", "steps", "qs-1")
	if err != nil || !strings.Contains(out, "ls -la") || !strings.Contains(out, "file_write") || strings.Contains(out, "submit") {
		t.Fatalf("steps: %v\n%s", err, out)
	}

	// Another member's token reads nothing.
	signer, _ := auth.NewSigner(bytes.Repeat([]byte{0xab}, 32))
	bob, _ := signer.Mint(auth.Claims{Org: "dev", Member: "bob"}, time.Hour)
	if _, err := capture(t, "read", "session", "qs-1", "--token", bob); err == nil || !strings.Contains(err.Error(), "404") {
		t.Fatalf("bob reading: %v", err)
	}
}

func TestUsageErrors(t *testing.T) {
	if _, err := capture(t, "frobnicate"); exitCode(err) != 2 {
		t.Fatalf("unknown command: %v", err)
	}
	if _, err := capture(t, "read", "session"); exitCode(err) != 2 {
		t.Fatalf("read without id: %v", err)
	}
	t.Setenv(config.EnvToken, "")
	if _, err := capture(t, "read", "session", "x"); err == nil || !strings.Contains(err.Error(), "SPINE_TOKEN") {
		t.Fatalf("read without token: %v", err)
	}
}

func TestTraceCommand(t *testing.T) {
	_, caughtUp := testNode(t)
	for _, f := range []string{"live.jsonl", "end.jsonl"} {
		if out, err := capture(t, "publish", "../../testdata/quickstart/"+f); err != nil {
			t.Fatalf("publish: %v %s", err, out)
		}
	}
	caughtUp()
	out, err := capture(t, "trace", "qs-1")
	if err != nil || !strings.Contains(out, "session qs-1  done  claude-code, model claude-opus-4-5-20251101") ||
		!strings.Contains(out, "serves step step-3 of run plan-run-42") || !strings.Contains(out, `pushed "NOTES.md"`) {
		t.Fatalf("trace session: %v\n%s", err, out)
	}
	digest := "blake3:5d715c79097cf702676bfe1450e627a43f9d3a081d62155ad32b85320f189c01" // NOTES.md in end.jsonl
	out, err = capture(t, "trace", digest)
	if err != nil || !strings.Contains(out, "producedBy: claude-code, model claude-opus-4-5-20251101, effort not reported, session qs-1") ||
		!strings.Contains(out, "step 3 (file_write)") {
		t.Fatalf("trace file: %v\n%s", err, out)
	}
	if out, err = capture(t, "trace", digest, "--json"); err != nil || !strings.Contains(out, `"artifacts"`) {
		t.Fatalf("trace --json: %v\n%s", err, out)
	}
}
