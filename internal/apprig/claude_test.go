package apprig_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spinehq/spine/internal/apprig"
	"github.com/spinehq/spine/internal/fakemodel"
)

// usage is a realistic Anthropic usage, varied by n.
func usage(n int64) fakemodel.Usage {
	return fakemodel.Usage{Input: 3 + n, Output: 40 * n, CacheRead: 12000 * n, CacheWrite5m: 900 + n, CacheWrite1h: 50}
}

// mainTurn is a turn only the main thread's request gets.
func mainTurn(u fakemodel.Usage, blocks ...fakemodel.Block) fakemodel.Turn {
	return fakemodel.Turn{Blocks: blocks, Usage: u, Match: fakemodel.MainThread}
}

// checkRun fails the test unless the run ended well, wrote its transcript
// and was served every scripted turn.
func checkRun(t *testing.T, srv *fakemodel.Server, run *apprig.ClaudeRun, scripted int) {
	t.Helper()
	if run.ExitCode != 0 {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", run.ExitCode, run.Stdout, run.Stderr)
	}
	if run.SessionID == "" {
		t.Fatalf("no session id in the output: %s", run.Stdout)
	}
	if len(run.Transcripts) == 0 || !strings.HasSuffix(run.Transcripts[0], run.SessionID+".jsonl") {
		t.Fatalf("transcripts %v, want %s.jsonl first", run.Transcripts, run.SessionID)
	}
	if got := len(srv.Scripted()); got != scripted {
		t.Fatalf("served %d scripted turns, want %d: %+v", got, scripted, srv.Log())
	}
}

func TestClaudeText(t *testing.T) {
	srv := fakemodel.Start(t)
	c := apprig.NewClaude(t, srv, nil)
	srv.Anthropic(mainTurn(usage(1), fakemodel.Thinking("the user greets"), fakemodel.Text("hello")))
	run := c.Run("say hello", nil)
	checkRun(t, srv, run, 1)
	if !strings.Contains(string(run.Stdout), `"apiKeySource":"ANTHROPIC_API_KEY"`) {
		t.Errorf("system/init has no apiKeySource ANTHROPIC_API_KEY: %s", run.Stdout)
	}
}

func TestClaudeTools(t *testing.T) {
	srv := fakemodel.Start(t)
	c := apprig.NewClaude(t, srv, nil)
	file := filepath.Join(c.Dir, "note.txt")
	srv.Anthropic(
		mainTurn(usage(1), fakemodel.Text("writing"), fakemodel.Tool("Write", map[string]any{"file_path": file, "content": "rig\n"})),
		mainTurn(usage(2), fakemodel.Tool("Read", map[string]any{"file_path": file})),
		mainTurn(usage(3), fakemodel.Tool("Bash", map[string]any{"command": "cat note.txt", "description": "show the note"})),
		mainTurn(usage(4), fakemodel.Text("done")),
	)
	checkRun(t, srv, c.Run("write, read and cat a note", nil), 4)
	if b, err := os.ReadFile(file); err != nil || string(b) != "rig\n" {
		t.Fatalf("the Write tool did not run: %q, %v", b, err)
	}
}

func TestClaudeSubagent(t *testing.T) {
	srv := fakemodel.Start(t)
	c := apprig.NewClaude(t, srv, nil)
	srv.Anthropic(
		mainTurn(usage(1), fakemodel.Tool("Agent", map[string]any{"description": "look", "prompt": "say sub", "subagent_type": "general-purpose"})),
		fakemodel.Turn{Blocks: []fakemodel.Block{fakemodel.Text("sub done")}, Usage: usage(2), Match: fakemodel.Subagent},
		mainTurn(usage(3), fakemodel.Text("main done")),
	)
	run := c.Run("delegate", nil)
	checkRun(t, srv, run, 3)
	var sub int
	for _, p := range run.Transcripts {
		if strings.Contains(p, "/subagents/agent-") {
			sub++
		}
	}
	if sub != 1 {
		t.Fatalf("subagent transcripts: %v", run.Transcripts)
	}
	if th := srv.Log()[1].Thread; th != fakemodel.ThreadSubagent {
		t.Fatalf("second request's thread %q, want subagent", th)
	}
}

func TestClaudeMCP(t *testing.T) {
	srv := fakemodel.Start(t)
	c := apprig.NewClaude(t, srv, &apprig.ClaudeOptions{MCP: true})
	srv.Anthropic(
		mainTurn(usage(1), fakemodel.Tool("mcp__spine__echo", map[string]any{"text": "ping"})),
		mainTurn(usage(2), fakemodel.Tool("mcp__spine__fail", map[string]any{"reason": "on purpose"})),
		mainTurn(usage(3), fakemodel.Text("done")),
	)
	run := c.Run("call the tools", nil)
	checkRun(t, srv, run, 3)
	out := string(run.Stdout)
	if !strings.Contains(out, `"is_error":true`) || !strings.Contains(out, "ping") {
		t.Fatalf("the MCP calls did not run (want ping and one is_error): %s", out)
	}
}

func TestClaudeResumeJSON(t *testing.T) {
	srv := fakemodel.Start(t)
	c := apprig.NewClaude(t, srv, nil)
	srv.Anthropic(mainTurn(usage(1), fakemodel.Text("one")), mainTurn(usage(2), fakemodel.Text("two")))
	first := c.Run("first", &apprig.RunOptions{Format: "json"})
	checkRun(t, srv, first, 1)
	second := c.Run("second", &apprig.RunOptions{Resume: first.SessionID})
	checkRun(t, srv, second, 2)
	if second.SessionID != first.SessionID || len(second.Transcripts) != 1 {
		t.Fatalf("resume: session %s after %s, transcripts %v", second.SessionID, first.SessionID, second.Transcripts)
	}
}

// A run keeps its temporary files under the test's directory: Claude Code
// writes a project directory named after the working directory and a
// claude-XXXX-cwd file per Bash call into $TMPDIR, which nothing removes
// when it is the machine's.
func TestClaudeLeavesNoTemp(t *testing.T) {
	srv := fakemodel.Start(t)
	c := apprig.NewClaude(t, srv, nil)
	srv.Anthropic(
		mainTurn(usage(1), fakemodel.Tool("Bash", map[string]any{"command": "pwd", "description": "where"})),
		mainTurn(usage(2), fakemodel.Text("done")),
	)
	checkRun(t, srv, c.Run("where am I", nil), 2)
	if left := tempFilesOf(t, os.TempDir(), c.Dir); len(left) > 0 {
		t.Errorf("the run left %v in %s", left, os.TempDir())
	}
	if mine := tempFilesOf(t, filepath.Dir(c.Dir), c.Dir); len(mine) == 0 {
		t.Errorf("no temporary file of the run under the test's directory %s", filepath.Dir(c.Dir))
	}
}

// tempFilesOf are Claude Code's temporary files under root (at any depth
// below a claude-* entry) that belong to a run in dir: a claude-*-cwd file
// holding dir, or an entry named after dir (its path with / as -).
func tempFilesOf(t *testing.T, root, dir string) []string {
	t.Helper()
	named := strings.ReplaceAll(dir, "/", "-")
	var out []string
	tops, _ := filepath.Glob(filepath.Join(root, "*", "claude-*"))
	direct, _ := filepath.Glob(filepath.Join(root, "claude-*"))
	for _, top := range append(direct, tops...) {
		filepath.WalkDir(top, func(p string, d os.DirEntry, err error) error { //nolint:errcheck // a partial walk still answers
			if err != nil {
				return nil
			}
			if d.Name() == named {
				out = append(out, p)
				return filepath.SkipDir
			}
			if !d.IsDir() && strings.HasSuffix(d.Name(), "-cwd") {
				if b, _ := os.ReadFile(p); strings.TrimSpace(string(b)) == dir {
					out = append(out, p)
				}
			}
			if d.IsDir() && p != top {
				return filepath.SkipDir // a project's own files: its name said whose it is
			}
			return nil
		})
	}
	return out
}

// RemoveBuilt removes the MCP server's build; the next MCPServer builds it
// again.
func TestMCPServerRemoved(t *testing.T) {
	p := apprig.MCPServer(t)
	apprig.RemoveBuilt()
	if _, err := os.Stat(filepath.Dir(p)); !os.IsNotExist(err) {
		t.Fatalf("after RemoveBuilt, %s: %v", filepath.Dir(p), err)
	}
	if q := apprig.MCPServer(t); q == p {
		t.Errorf("built again at the removed path %s", q)
	} else if _, err := os.Stat(q); err != nil {
		t.Error(err)
	}
}
