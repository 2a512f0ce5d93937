package apprig

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/spinehq/spine/internal/fakemodel"
)

// ClaudeTools are the tools a Claude run may use without asking: print
// mode has no one to ask, and running as root refuses
// --dangerously-skip-permissions. "Agent" is the Task tool's name in
// 2.1.197's requests; mcp__spine allows every tool of the rig's MCP server.
var ClaudeTools = []string{"Bash", "Read", "Write", "Edit", "Agent", "Task", "mcp__spine"}

// Claude is one Claude Code home against a fake model server: a temporary
// HOME and working directory that every run in it shares, so a run can
// resume another.
type Claude struct {
	tb  testing.TB
	srv *fakemodel.Server
	// Bin is the binary run; Home is $HOME; Dir is the working directory.
	Bin, Home, Dir string
	root           string   // the test's temporary directory: each run's TMPDIR is under it
	logs           string   // where each run's stdout is saved
	mcpConfig      string   // --mcp-config file; "" without MCP
	env            []string // ClaudeOptions.Env
	runs           int
}

// ClaudeOptions configure a Claude home. A nil *ClaudeOptions is the zero
// value.
type ClaudeOptions struct {
	// MCP gives the app the rig's MCP server (see MCPServer) as "spine";
	// false runs without MCP servers.
	MCP bool
	// Env is added to (and overrides) the rig's environment, e.g.
	// "ANTHROPIC_API_KEY=" to run without a key; nil adds nothing.
	Env []string
	// Telemetry switches the app's OTLP exporters on; nil leaves them off.
	Telemetry *ClaudeTelemetry
	// Hooks configures http hooks in $HOME/.claude/settings.json; nil
	// configures none.
	Hooks *ClaudeHooks
}

// NewClaude makes a Claude home talking to srv. It skips the test, naming
// `make real-apps`, where the binary is not installed.
func NewClaude(tb testing.TB, srv *fakemodel.Server, opts *ClaudeOptions) *Claude {
	tb.Helper()
	o := cmp.Or(opts, &ClaudeOptions{})
	root := tb.TempDir()
	c := &Claude{tb: tb, srv: srv, Bin: ClaudeBinary(tb), root: root,
		Home: filepath.Join(root, "home"), Dir: filepath.Join(root, "work"), logs: filepath.Join(root, "logs")}
	for _, d := range []string{c.Home, c.Dir, c.logs} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			tb.Fatal(err)
		}
	}
	if o.MCP {
		c.mcpConfig = filepath.Join(root, "mcp.json")
		writeMCPConfig(tb, c.mcpConfig, MCPServer(tb))
	}
	writeSettings(tb, c.Home, o)
	c.env = append(telemetryEnv(o), o.Env...)
	return c
}

// baseEnv is the whole environment a run gets but its temporary directory
// and ClaudeOptions.Env: nothing of the test's own beyond PATH, so no key
// or setting of the machine leaks in.
func (c *Claude) baseEnv() []string {
	return []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + c.Home,
		"LANG=C.UTF-8",
		"ANTHROPIC_BASE_URL=" + c.srv.URL(),
		"ANTHROPIC_API_KEY=dummy",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
		"DISABLE_AUTOUPDATER=1",
	}
}

// writeMCPConfig writes a --mcp-config file naming the rig's server.
func writeMCPConfig(tb testing.TB, path, server string) {
	tb.Helper()
	cfg := map[string]any{"mcpServers": map[string]any{
		"spine": map[string]any{"type": "stdio", "command": server, "args": []string{}},
	}}
	b, err := json.Marshal(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		tb.Fatal(err)
	}
}

// RunOptions configure one run. A nil *RunOptions is the zero value.
type RunOptions struct {
	// Format is --output-format: "stream-json" (with --verbose) when "",
	// or "json".
	Format string
	// Resume is the session id to --resume; "" starts a new session.
	Resume string
	// Timeout bounds the run; zero means two minutes.
	Timeout time.Duration
	// More are prompts the same process answers after the first: with
	// them every prompt goes to stdin as a stream-json user message
	// (--input-format stream-json), one query each. nil runs one prompt.
	More []string
}

// ClaudeRun is what one run left behind.
type ClaudeRun struct {
	// Stdout is the run's output log (stream-json lines or one json
	// object); Log is the file it was saved to.
	Stdout []byte
	Log    string
	Stderr []byte
	// ExitCode is the process's exit status.
	ExitCode int
	// Started and Ended bracket the process: the wall clock just before it
	// was started and just after it ended.
	Started, Ended time.Time
	// SessionID is the session the output names; "" if it names none.
	SessionID string
	// Transcripts are every transcript under $HOME/.claude/projects after
	// the run (sessions first, then subagents/agent-*.jsonl), sorted.
	Transcripts []string
}

// Run runs `claude -p prompt` in the home and waits for it to end. A run
// that outlives its timeout fails the test.
func (c *Claude) Run(prompt string, opts *RunOptions) *ClaudeRun {
	c.tb.Helper()
	o := cmp.Or(opts, &RunOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), cmp.Or(o.Timeout, 2*time.Minute))
	defer cancel()
	cmd := exec.CommandContext(ctx, c.Bin, c.args(prompt, o)...)
	cmd.Dir, cmd.Env = c.Dir, c.runEnv()
	if o.More != nil {
		cmd.Stdin = userMessages(append([]string{prompt}, o.More...))
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	killGroup(cmd)
	started := time.Now().UTC()
	err := cmd.Run()
	ended := time.Now().UTC()
	if ctx.Err() != nil {
		c.tb.Fatalf("claude: timed out after %v\nstderr: %s", cmp.Or(o.Timeout, 2*time.Minute), stderr.Bytes())
	}
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		c.tb.Fatalf("claude: %v", err)
	}
	run := &ClaudeRun{Stdout: stdout.Bytes(), Stderr: stderr.Bytes(), ExitCode: cmd.ProcessState.ExitCode(),
		Started: started, Ended: ended, SessionID: sessionID(stdout.Bytes()), Transcripts: c.Transcripts()}
	run.Log = c.saveLog(run.Stdout, o.Format)
	return run
}

// runEnv is one run's environment: the rig's, a temporary directory of
// its own under the test's (Claude Code keeps its per-project state and a
// file per Bash call there, under the system's /tmp otherwise, never
// removed), then ClaudeOptions.Env.
func (c *Claude) runEnv() []string {
	tmp, err := os.MkdirTemp(c.root, "tmp-")
	if err != nil {
		c.tb.Fatal(err)
	}
	env := append(c.baseEnv(), "TMPDIR="+tmp, "CLAUDE_CODE_TMPDIR="+tmp)
	return append(env, c.env...)
}

// Env is the environment one run gets (see runEnv), for a test that
// starts the binary itself (spine run).
func (c *Claude) Env() []string { return c.runEnv() }

// args are the command line of one run.
func (c *Claude) args(prompt string, o *RunOptions) []string {
	args := []string{"-p", prompt}
	if o.More != nil {
		args = []string{"-p", "--input-format", "stream-json"}
	}
	args = append(args, "--output-format", cmp.Or(o.Format, "stream-json"),
		"--allowedTools", strings.Join(ClaudeTools, ","))
	if cmp.Or(o.Format, "stream-json") == "stream-json" {
		args = append(args, "--verbose")
	}
	if o.Resume != "" {
		args = append(args, "--resume", o.Resume)
	}
	if c.mcpConfig != "" {
		args = append(args, "--mcp-config", c.mcpConfig, "--strict-mcp-config")
	}
	return args
}

// userMessages are prompts as --input-format stream-json reads them.
func userMessages(prompts []string) *bytes.Reader {
	var b bytes.Buffer
	for _, p := range prompts {
		line, _ := json.Marshal(map[string]any{"type": "user", "message": map[string]any{"role": "user", "content": p}})
		b.Write(append(line, '\n'))
	}
	return bytes.NewReader(b.Bytes())
}

// killGroup runs the command in its own process group and kills the whole
// group on timeout, MCP servers and tool shells included.
func killGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
}

// saveLog writes a run's stdout to the logs directory, named in run order.
func (c *Claude) saveLog(out []byte, format string) string {
	c.runs++
	ext := ".jsonl"
	if format == "json" {
		ext = ".json"
	}
	path := filepath.Join(c.logs, fmt.Sprintf("claude-run%d%s", c.runs, ext))
	if err := os.WriteFile(path, out, 0o644); err != nil {
		c.tb.Fatal(err)
	}
	return path
}

// Projects is $HOME/.claude/projects, where the app writes transcripts.
func (c *Claude) Projects() string { return filepath.Join(c.Home, ".claude", "projects") }

// Transcripts are every .jsonl file under Projects: session transcripts
// first, then subagents' (…/<session>/subagents/agent-*.jsonl), each group
// sorted.
func (c *Claude) Transcripts() []string {
	var main, sub []string
	err := filepath.WalkDir(c.Projects(), func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".jsonl") {
			return err
		}
		if filepath.Base(filepath.Dir(p)) == "subagents" {
			sub = append(sub, p)
		} else {
			main = append(main, p)
		}
		return nil
	})
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		c.tb.Fatal(err)
	}
	sort.Strings(main)
	sort.Strings(sub)
	return append(main, sub...)
}

// sessionID is the first session_id the output names.
func sessionID(out []byte) string {
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 0, 1<<20), 64<<20)
	for sc.Scan() {
		var line struct {
			SessionID string `json:"session_id"`
		}
		if json.Unmarshal(sc.Bytes(), &line) == nil && line.SessionID != "" {
			return line.SessionID
		}
	}
	return ""
}
