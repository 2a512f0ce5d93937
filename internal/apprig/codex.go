package apprig

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spinehq/spine/internal/fakemodel"
)

// CodexModel is the model the rig names: one Codex 0.171 knows, so it
// declares its full tool set (exec_command, apply_patch as a freeform
// custom tool, tool_search) instead of warning about missing metadata.
const CodexModel = "gpt-5.5"

// codexKeyEnv is the variable the rig's provider reads its API key from.
const codexKeyEnv = "SPINE_FAKE_OPENAI_KEY"

// Codex is a Codex installation for one test: a temporary CODEX_HOME whose
// config.toml points a model provider at a fakemodel server, and a
// workspace directory the runs work in.
type Codex struct {
	Bin  string // the codex binary
	Home string // $CODEX_HOME (and $HOME)
	Dir  string // the workspace: each run's working directory
	// KillWhen, when set, kills the next runs with SIGKILL as soon as
	// their stdout holds it (a crash at a known point, e.g. inside a
	// command whose item.started is out); the run's exit code is then -1.
	KillWhen string
	env      []string
}

// CodexOptions tune a Codex installation; nil means the defaults.
type CodexOptions struct {
	// Model is the model named in config.toml; "" is CodexModel.
	Model string
	// MCP gives the app the rig's MCP server (see MCPServer) as "spine"
	// (config.toml's [mcp_servers.spine]; Codex puts its tools in
	// namespace mcp__spine); false runs without MCP servers.
	MCP bool
	// Env is added to (and overrides) each run's environment; nil adds
	// nothing.
	Env []string
	// ChatGPT signs the home in with a ChatGPT account (CodexChatGPTPlan,
	// account CodexChatGPTAccount) instead of an API key: auth.json holds
	// an unsigned token naming them and the provider sends it
	// (requires_openai_auth). Codex then also asks GET /v1/models and
	// tries the account's remote MCP apps (which fail here).
	ChatGPT bool
	// Telemetry writes an [otel] table; nil writes none.
	Telemetry *CodexTelemetry
}

// The ChatGPT account a ChatGPT-signed-in home names.
const (
	CodexChatGPTPlan    = "plus"
	CodexChatGPTAccount = "acct-apprig"
)

// CodexRun is what one codex process did.
type CodexRun struct {
	Stdout   []byte // the exec --json log, as written
	Stderr   []byte
	ExitCode int
	// ThreadID is the thread.started line's thread_id ("" when there was none).
	ThreadID string
	// Rollouts are every rollout file under $CODEX_HOME/sessions after the
	// run, in path order (a resumed thread appends to its own file).
	Rollouts []string
}

// NewCodex makes a CODEX_HOME configured for srv. Analytics are off and
// approvals and the sandbox are bypassed per run, so commands and patches
// run unattended.
func NewCodex(tb testing.TB, srv *fakemodel.Server, opts *CodexOptions) *Codex {
	tb.Helper()
	if opts == nil {
		opts = &CodexOptions{}
	}
	c := &Codex{Bin: CodexBinary(tb), Home: tb.TempDir(), Dir: tb.TempDir(), env: opts.Env}
	var cfg strings.Builder
	fmt.Fprintf(&cfg, "model = %q\nmodel_provider = \"fakemodel\"\n\n", cmp.Or(opts.Model, CodexModel))
	fmt.Fprintf(&cfg, "[model_providers.fakemodel]\nname = \"fakemodel\"\nbase_url = %q\nwire_api = \"responses\"\n",
		srv.URL()+"/v1")
	if opts.ChatGPT {
		cfg.WriteString("requires_openai_auth = true\n\n")
		writeChatGPTAuth(tb, c.Home)
	} else {
		fmt.Fprintf(&cfg, "env_key = %q\n\n", codexKeyEnv)
	}
	cfg.WriteString("[analytics]\nenabled = false\n")
	if opts.MCP {
		fmt.Fprintf(&cfg, "\n[mcp_servers.spine]\ncommand = %q\nargs = []\n", MCPServer(tb))
	}
	if opts.Telemetry != nil {
		cfg.WriteString(opts.Telemetry.toml())
	}
	if err := os.WriteFile(filepath.Join(c.Home, "config.toml"), []byte(cfg.String()), 0o600); err != nil {
		tb.Fatal(err)
	}
	return c
}

// writeChatGPTAuth writes the auth.json of a ChatGPT sign-in: an
// unsigned id token (Codex reads its claims, it does not check the
// signature) naming the plan and account, refreshed just now so Codex does
// not try to refresh it.
func writeChatGPTAuth(tb testing.TB, home string) {
	tb.Helper()
	now := time.Now().UTC()
	part := func(v any) string {
		b, _ := json.Marshal(v)
		return base64.RawURLEncoding.EncodeToString(b)
	}
	token := part(map[string]any{"alg": "none", "typ": "JWT"}) + "." + part(map[string]any{
		"email": "apprig@example.test", "iat": now.Unix(), "exp": now.Add(24 * time.Hour).Unix(),
		"https://api.openai.com/auth": map[string]any{"chatgpt_plan_type": CodexChatGPTPlan,
			"chatgpt_account_id": CodexChatGPTAccount, "chatgpt_user_id": "user-apprig", "user_id": "user-apprig"},
	}) + ".unsigned"
	auth, _ := json.Marshal(map[string]any{"auth_mode": "chatgpt", "OPENAI_API_KEY": nil,
		"tokens": map[string]any{"id_token": token, "access_token": token, "refresh_token": "unused",
			"account_id": CodexChatGPTAccount},
		"last_refresh": now.Format(time.RFC3339)})
	if err := os.WriteFile(filepath.Join(home, "auth.json"), auth, 0o600); err != nil {
		tb.Fatal(err)
	}
}

// Exec runs `codex exec --json PROMPT`.
func (c *Codex) Exec(tb testing.TB, prompt string) *CodexRun {
	tb.Helper()
	return c.run(tb, "exec", "--json", "--skip-git-repo-check", "--dangerously-bypass-approvals-and-sandbox", prompt)
}

// Resume runs `codex exec resume --json THREAD PROMPT`, continuing a thread.
func (c *Codex) Resume(tb testing.TB, threadID, prompt string) *CodexRun {
	tb.Helper()
	return c.run(tb, "exec", "resume", "--json", "--skip-git-repo-check", "--dangerously-bypass-approvals-and-sandbox",
		threadID, prompt)
}

// codexTimeout bounds one run; a run against the fake model takes well
// under a second per turn.
const codexTimeout = 2 * time.Minute

func (c *Codex) run(tb testing.TB, args ...string) *CodexRun {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), codexTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, c.Bin, args...)
	cmd.Dir = c.Dir
	cmd.Env = c.Env(tb)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if c.KillWhen != "" {
		cmd.Stdout = &killWriter{buf: &stdout, when: []byte(c.KillWhen), cmd: cmd}
	}
	err := cmd.Run()
	run := &CodexRun{Stdout: stdout.Bytes(), Stderr: stderr.Bytes()}
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		run.ExitCode = exit.ExitCode()
	case err != nil:
		tb.Fatalf("codex %s: %v\nstderr:\n%s", strings.Join(args, " "), err, stderr.Bytes())
	}
	if ctx.Err() != nil {
		tb.Fatalf("codex %s: no end within %s\nstderr:\n%s", strings.Join(args, " "), codexTimeout, stderr.Bytes())
	}
	run.ThreadID = threadID(run.Stdout)
	run.Rollouts = c.Rollouts(tb)
	return run
}

// Env is the environment one run gets, for a test that starts the binary
// itself (spine run). TMPDIR is a temporary directory of the run's own,
// removed with the test.
func (c *Codex) Env(tb testing.TB) []string {
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + c.Home, "CODEX_HOME=" + c.Home, "TMPDIR=" + tb.TempDir(),
		codexKeyEnv + "=dummy", "LANG=C.UTF-8", "NO_COLOR=1", "RUST_LOG=error"}
	return append(env, c.env...)
}

// killWriter collects a run's stdout and kills the run once it holds when.
type killWriter struct {
	buf  *bytes.Buffer
	when []byte
	cmd  *exec.Cmd
	done bool
}

func (w *killWriter) Write(p []byte) (int, error) {
	w.buf.Write(p)
	if !w.done && bytes.Contains(w.buf.Bytes(), w.when) {
		w.done = true
		w.cmd.Process.Kill() //nolint:errcheck // it may have ended already
	}
	return len(p), nil
}

// Rollouts are the rollout files under $CODEX_HOME/sessions, in path order.
func (c *Codex) Rollouts(tb testing.TB) []string {
	tb.Helper()
	var out []string
	err := filepath.WalkDir(filepath.Join(c.Home, "sessions"), func(p string, d fs.DirEntry, err error) error {
		if errors.Is(err, fs.ErrNotExist) {
			return fs.SkipAll
		}
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".jsonl") {
			out = append(out, p)
		}
		return err
	})
	if err != nil {
		tb.Fatal(err)
	}
	slices.Sort(out)
	return out
}

// threadID is the exec --json log's thread.started thread_id.
func threadID(log []byte) string {
	sc := bufio.NewScanner(bytes.NewReader(log))
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		var l struct {
			Type     string `json:"type"`
			ThreadID string `json:"thread_id"`
		}
		if json.Unmarshal(sc.Bytes(), &l) == nil && l.Type == "thread.started" {
			return l.ThreadID
		}
	}
	return ""
}
