package apprig_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spinehq/spine/internal/apprig"
	"github.com/spinehq/spine/internal/fakemodel"
)

// TestCodexRuns runs the real codex once against the fake model: a turn
// of three responses (reasoning, text and a command; a patch; a closing
// text). The command and the patch really run, every response served is
// a scripted one, and the run's own report equals what was served. Its
// temporary directory is the test's, not the machine's.
func TestCodexRuns(t *testing.T) {
	srv := fakemodel.Start(t)
	srv.OpenAI(
		fakemodel.Turn{Blocks: []fakemodel.Block{fakemodel.Thinking("look first"), fakemodel.Text("listing"),
			fakemodel.Tool("exec_command", map[string]any{"cmd": "printenv TMPDIR > tmpdir.txt; echo hi"})},
			Usage: fakemodel.Usage{Input: 900, CacheRead: 3000, Output: 40, Reasoning: 12}},
		fakemodel.Turn{Blocks: []fakemodel.Block{fakemodel.Tool("apply_patch",
			"*** Begin Patch\n*** Add File: hello.txt\n+hello\n*** End Patch\n")},
			Usage: fakemodel.Usage{Input: 100, CacheRead: 3900, Output: 30}},
		fakemodel.Turn{Blocks: []fakemodel.Block{fakemodel.Text("done")},
			Usage: fakemodel.Usage{Input: 50, CacheRead: 4000, Output: 5}},
	)
	c := apprig.NewCodex(t, srv, nil)
	run := c.Exec(t, "list and write")
	if run.ExitCode != 0 || run.ThreadID == "" || len(run.Rollouts) != 1 {
		t.Fatalf("exit %d, thread %q, rollouts %v\nstderr:\n%s", run.ExitCode, run.ThreadID, run.Rollouts, run.Stderr)
	}
	if b, err := os.ReadFile(filepath.Join(c.Dir, "hello.txt")); err != nil || string(b) != "hello\n" {
		t.Fatalf("the patch did not apply: %q, %v", b, err)
	}
	if b, _ := os.ReadFile(filepath.Join(c.Dir, "tmpdir.txt")); !strings.HasPrefix(string(b), filepath.Dir(c.Home)+"/") {
		t.Errorf("TMPDIR %q, want one under the test's %s", b, filepath.Dir(c.Home))
	}
	log := srv.Log()
	if len(log) != 3 || len(srv.Scripted()) != 3 {
		t.Fatalf("served %d responses, %d scripted; want 3 scripted", len(log), len(srv.Scripted()))
	}
	var want fakemodel.Usage
	for _, r := range log {
		want.Add(r.Usage)
	}
	got := lastTurnUsage(t, run.Stdout)
	if got.Input != want.Input+want.CacheRead || got.Cached != want.CacheRead || got.Output != want.Output ||
		got.Reasoning != want.Reasoning {
		t.Fatalf("turn.completed usage %+v; served %+v", got, want)
	}
}

type execUsage struct {
	Input     int64 `json:"input_tokens"`
	Cached    int64 `json:"cached_input_tokens"`
	Output    int64 `json:"output_tokens"`
	Reasoning int64 `json:"reasoning_output_tokens"`
}

// lastTurnUsage is the usage of the exec --json log's last turn.completed.
func lastTurnUsage(t *testing.T, log []byte) execUsage {
	t.Helper()
	var u *execUsage
	sc := bufio.NewScanner(bytes.NewReader(log))
	for sc.Scan() {
		var l struct {
			Type  string     `json:"type"`
			Usage *execUsage `json:"usage"`
		}
		if json.Unmarshal(sc.Bytes(), &l) == nil && l.Type == "turn.completed" {
			u = l.Usage
		}
	}
	if u == nil {
		t.Fatalf("no turn.completed in\n%s", log)
	}
	return *u
}
