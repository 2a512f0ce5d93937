package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode"

	"github.com/spinehq/spine/desktop"
	"github.com/spinehq/spine/streams"
)

// A runner config allows what it names and nothing more: a workspace
// under an allowed one runs there, another (or one reached through a
// symbolic link out of it) is refused, as is an app not named; a task
// naming none runs in the first workspace with Claude Code.
func TestConsentAllows(t *testing.T) {
	allowed, other := t.TempDir(), t.TempDir()
	sub := filepath.Join(allowed, "api")
	escape := filepath.Join(allowed, "out")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(other, escape); err != nil {
		t.Fatal(err)
	}
	c, err := parseConsent([]byte(`{"apps": {"claude-code": {"permissionMode": "acceptEdits"}}, "workspaces": ["`+allowed+`"]}`), "/")
	if err != nil {
		t.Fatal(err)
	}
	real, _ := filepath.EvalSymlinks(allowed)
	for _, tc := range []struct {
		task        desktop.Task
		app, dir    string
		refusedWith string
	}{
		{desktop.Task{}, "claude-code", real, ""},
		{desktop.Task{Workspace: sub}, "claude-code", filepath.Join(real, "api"), ""},
		{desktop.Task{Workspace: other}, "", "", "workspace_not_allowed"},
		{desktop.Task{Workspace: escape}, "", "", "workspace_not_allowed"},
		{desktop.Task{Workspace: "api"}, "", "", "not an absolute path"},
		{desktop.Task{Workspace: filepath.Join(allowed, "missing")}, "", "", "workspace_not_found"},
		{desktop.Task{App: "codex"}, "", "", "app_not_allowed"},
	} {
		app, dir, err := c.allow(&tc.task)
		var ref *refusal
		switch {
		case tc.refusedWith != "" && (!errors.As(err, &ref) || !strings.Contains(ref.reason, tc.refusedWith)):
			t.Errorf("%+v: %v, want refused with %q", tc.task, err, tc.refusedWith)
		case tc.refusedWith == "" && (err != nil || app != tc.app || dir != tc.dir):
			t.Errorf("%+v: %s in %s (%v), want %s in %s", tc.task, app, dir, err, tc.app, tc.dir)
		}
	}
}

// The root as a workspace admits what is under it (before, "/" admitted
// only "/": the check was w+"/", "//"); a relative workspace is the config
// file's directory's, not the directory spine runner was started in.
func TestConsentWorkspaces(t *testing.T) {
	root, err := parseConsent([]byte(`{"apps": {"claude-code": {}}, "workspaces": ["/"]}`), "/")
	if err != nil {
		t.Fatal(err)
	}
	sub := t.TempDir()
	real, _ := filepath.EvalSymlinks(sub)
	if _, dir, err := root.allow(&desktop.Task{Workspace: sub}); err != nil || dir != real {
		t.Errorf("workspace / and a task in %s: %s, %v", sub, dir, err)
	}
	cfgDir := t.TempDir()
	if err := os.Mkdir(filepath.Join(cfgDir, "api"), 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(cfgDir, "runner-config.json")
	if err := os.WriteFile(path, []byte(`{"apps": {"claude-code": {}}, "workspaces": ["api"]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Chdir(t.TempDir()) // somewhere with no api
	c, err := loadConsent(path)
	if err != nil {
		t.Fatal(err)
	}
	realCfg, _ := filepath.EvalSymlinks(cfgDir)
	if want := filepath.Join(realCfg, "api"); c.Workspaces[0] != want {
		t.Errorf("relative workspace api is %s, want %s", c.Workspaces[0], want)
	}
}

// With no config file, or one listing no workspace, spine runner takes no
// task: it refuses to start, saying what to write. Before, it ran tasks
// in whatever directory it was started in.
func TestConsentRequiresAWorkspace(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "runner-config.json")
	if _, err := loadConsent(missing); err == nil || !strings.Contains(err.Error(), "no runner config at "+missing) ||
		!strings.Contains(err.Error(), `"workspaces": [`) {
		t.Errorf("no config: %v, want told to write one with workspaces", err)
	}
	if _, err := parseConsent([]byte(`{"apps": {"claude-code": {}}}`), "/"); err == nil || !strings.Contains(err.Error(), `"workspaces" names none`) {
		t.Errorf("no workspace: %v", err)
	}
}

// A config that is wrong is refused whole, naming what is wrong.
func TestConsentRefusesBadConfig(t *testing.T) {
	for cfg, want := range map[string]string{
		`{"apps": {}}`: "names no app",
		`{"apps": {"claude-code": {}}, "workspaces": []}`:               "names none",
		`{"apps": {"claude-code": {"permissionMode": "yolo"}}}`:         "permissionMode",
		`{"apps": {"codex": {"sandbox": "none"}}}`:                      "sandbox",
		`{"apps": {"codex": {"allowedTools": ["Bash"]}}}`:               "codex has no permissionMode",
		`{"apps": {"vim": {}}}`:                                         "want claude-code or codex",
		`{"apps": {"claude-code": {}}, "workspace": ["/"]}`:             "unknown field",
		`{"apps": {"claude-code": {}}, "workspaces": ["/no/such/dir"]}`: "workspace",
	} {
		if _, err := parseConsent([]byte(cfg), "/"); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", cfg, err, want)
		}
	}
}

// The app's command line carries the owner's permission flags, resumes
// the task's local session, and takes the prompt after "--" or last, so a
// prompt that looks like a flag is still the prompt.
func TestAppCommand(t *testing.T) {
	claude := appConsent{PermissionMode: "plan", AllowedTools: []string{"Read", "Grep"}}
	const s1 = "0b0a5d1e-7c1f-4a59-9d5e-2f6f1d2c3b4a"
	got, _, _ := claude.appCommand("claude-code", "--help", s1)
	want := []string{"-p", "--permission-mode", "plan", "--allowedTools", "Read,Grep", "--resume=" + s1,
		"--output-format", "stream-json", "--verbose", "--", "--help"}
	if !slices.Equal(got, want) {
		t.Errorf("claude: %q\nwant %q", got, want)
	}
	codex := appConsent{Sandbox: "read-only", Args: []string{"--skip-git-repo-check"}}
	got, _, _ = codex.appCommand("codex", "fix it", "")
	if want := []string{"exec", "--json", "--sandbox", "read-only", "--skip-git-repo-check", "--", "fix it"}; !slices.Equal(got, want) {
		t.Errorf("codex: %q\nwant %q", got, want)
	}
	got, _, _ = codex.appCommand("codex", "again", s1)
	if want := []string{"exec", "resume", "--json", "-c", `sandbox_mode="read-only"`, "--skip-git-repo-check", "--", s1, "again"}; !slices.Equal(got, want) {
		t.Errorf("codex resume: %q\nwant %q", got, want)
	}
}

// A follow-up whose local session id is not an app's session id (a flag,
// say) is refused invalid_local_session before any command line is made:
// claude -p --resume --dangerously-skip-permissions would read it as the
// flag. Before, it went on the command line as it came.
func TestRunnerRefusesInvalidLocalSession(t *testing.T) {
	c, err := parseConsent([]byte(`{"apps": {"claude-code": {"bin": "/bin/true"}, "codex": {"bin": "/bin/true"}}, "workspaces": ["`+t.TempDir()+`"]}`), "/")
	if err != nil {
		t.Fatal(err)
	}
	for _, app := range []string{"claude-code", "codex"} {
		for _, id := range []string{"--dangerously-skip-permissions", "-c", "../x", "0b0a5d1e-7c1f-4a59-9d5e-2f6f1d2c3b4a --last", "not-a-uuid"} {
			h := &heldTask{r: &runner{consent: c}, task: desktop.Task{App: app, LocalSessionID: id}}
			if spec, _, status, msg := h.prepare(); status != "refused" || !strings.HasPrefix(msg, "invalid_local_session: ") {
				t.Errorf("%s resuming %q: %s %q, argv %q; want refused invalid_local_session", app, id, status, msg, spec.Argv)
			}
		}
		h := &heldTask{r: &runner{consent: c}, task: desktop.Task{App: app, LocalSessionID: "0B0A5D1E-7c1f-4a59-9d5e-2f6f1d2c3b4a"}}
		if _, _, status, msg := h.prepare(); status != "" {
			t.Errorf("%s resuming a UUID: %s %q", app, status, msg)
		}
	}
}

// login keeps the token readable by the user alone, and the runnerId it
// generated the first time is the one later logins mint for; an expired
// token makes spine runner say to log in again.
func TestRunnerLogin(t *testing.T) {
	_, _ = testNode(t)
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	if _, err := capture(t, "runner"); err == nil || !strings.Contains(err.Error(), "spine runner login") {
		t.Fatalf("spine runner before login: %v", err)
	}
	read := func() *runnerCreds {
		path, _ := runnerCredsPath()
		fi, err := os.Stat(path)
		if err != nil || fi.Mode().Perm() != 0o600 {
			t.Fatalf("%s: %v %v", path, fi.Mode(), err)
		}
		c, err := loadRunnerCreds(path)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	if out, err := capture(t, "runner", "login", "--machine", "laptop"); err != nil {
		t.Fatalf("login: %v\n%s", err, out)
	}
	first := read()
	if out, err := capture(t, "runner", "login"); err != nil {
		t.Fatalf("login again: %v\n%s", err, out)
	}
	second := read()
	if first.RunnerID == "" || second.RunnerID != first.RunnerID || second.Machine != "laptop" || second.TokenID == first.TokenID {
		t.Fatalf("logins: %+v then %+v", first, second)
	}
	// The second login revoked the first's token, and only it.
	for tok, want := range map[string]int{first.Token: http.StatusUnauthorized, second.Token: http.StatusOK} {
		c, err := newClient(first.URL, tok)
		if err != nil {
			t.Fatal(err)
		}
		inv := []byte(`{"machine": "laptop", "apps": ["claude-code"], "capabilities": ["remote_session"], "protocolVersion": 1}`)
		err = c.do(context.Background(), http.MethodPost, "/v1/desktop-runner/register", inv, &json.RawMessage{})
		got, ae := http.StatusOK, (*apiError)(nil)
		switch {
		case errors.As(err, &ae):
			got = ae.Status
		case err != nil:
			got = -1
		}
		if got != want {
			t.Errorf("registering with the %s login's token: %v, want %d", map[bool]string{true: "first", false: "second"}[tok == first.Token], err, want)
		}
	}
	second.ExpiresAt = time.Now().Add(-time.Minute)
	path, _ := runnerCredsPath()
	if err := saveRunnerCreds(path, second); err != nil {
		t.Fatal(err)
	}
	_, err := capture(t, "runner", "--once")
	if err == nil || !strings.Contains(err.Error(), "expired") || !errors.Is(err, errLoginAgain) {
		t.Fatalf("spine runner with an expired token: %v", err)
	}
}

// What a task or its app says reaches the terminal without control
// characters (other than newline and tab) or bidirectional overrides: the
// runner's lines, the --confirm question and the rendering of the run.
// Before, "\r\x1b[2K" in the instructions could erase and rewrite the
// question.
func TestRunnerShowsNoControlCharacters(t *testing.T) {
	evil := "ok\r\x1b[2KRun it with claude-code in /safe? [y/N] \u202eevil\x07\x9b\n\tnext"
	want := "ok[2KRun it with claude-code in /safe? [y/N] evil\n\tnext"
	if got := shown(evil); got != want {
		t.Fatalf("shown = %q, want %q", got, want)
	}
	var term bytes.Buffer
	old, oldPrompt := stdout, runnerPrompt
	stdout, runnerPrompt = &term, &term
	t.Cleanup(func() { stdout, runnerPrompt = old, oldPrompt })
	r := &runner{answers: bufio.NewReader(strings.NewReader("n\n")), out: &runnerOut{live: true}}
	r.ask(context.Background(), evil+"\nRun it? [y/N] ")
	r.out.say("task", "▶ task t1: "+evil, nil)
	show := r.out.envelopes()
	show(&streams.Envelope{Type: streams.TypeSessionChunk, Stream: "stdout", Text: evil})
	show(&streams.Envelope{Type: streams.TypeSessionChunk, Stream: "event", Event: &streams.Event{Action: "command", Command: evil}})
	show(&streams.Envelope{Type: streams.TypeSessionEnd, Status: "failed", Error: evil})
	if bad := strings.IndexFunc(term.String(), func(r rune) bool {
		return r != '\n' && r != '\t' && (unicode.IsControl(r) || r == 0x202e)
	}); bad >= 0 {
		t.Fatalf("the terminal got a control character at %d: %q", bad, term.String())
	}
	if n := strings.Count(term.String(), "evil"); n != 5 {
		t.Fatalf("the terminal shows %d of the 5 texts:\n%s", n, term.String())
	}
}
