package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spinehq/spine/apps"
	"github.com/spinehq/spine/desktop"
)

// consent is what the desktop's owner allows spine runner to do, from the
// runner config file (docs/runner.md): which apps, with which of the app's
// own permission flags, in which directories. A task never widens it: a
// task asking for more is refused with the reason.
type consent struct {
	// Apps are the apps a task may run, by name (claude-code, codex); an
	// app absent is refused. Empty (no config file): Claude Code alone,
	// with the app's own defaults.
	Apps map[string]appConsent `json:"apps"`
	// Workspaces are the directories a task may run in (each with what is
	// under it), at least one: a task naming none runs in the first; one
	// naming another is refused. A relative one is the config file's
	// directory's.
	Workspaces []string `json:"workspaces"`
}

// appConsent is one app's settings, passed to its own flags.
type appConsent struct {
	// Bin is the app's binary; "" is claude or codex on PATH.
	Bin string `json:"bin"`
	// PermissionMode is Claude Code's --permission-mode; "" passes none
	// (the app's default: in print mode, a tool that needs permission is
	// denied).
	PermissionMode string `json:"permissionMode"`
	// AllowedTools is Claude Code's --allowedTools; empty passes none.
	AllowedTools []string `json:"allowedTools"`
	// Sandbox is Codex's sandbox (--sandbox on a new session, -c
	// sandbox_mode on a resumed one); "" passes none (Codex's default).
	Sandbox string `json:"sandbox"`
	// Args are more of the app's own flags, before the prompt (e.g.
	// Codex's --skip-git-repo-check, a --model); empty adds none.
	Args []string `json:"args"`
}

var (
	claudeModes    = []string{"acceptEdits", "auto", "bypassPermissions", "default", "dontAsk", "plan"}
	codexSandboxes = []string{"read-only", "workspace-write", "danger-full-access"}
)

// consentExample is a config to start from, for the errors that say how.
const consentExample = `{"apps": {"claude-code": {}}, "workspaces": ["/path/to/your/project"]}`

// loadConsent reads the config file at path. There is none by default: the
// owner says where tasks may run before the runner takes any.
func loadConsent(path string) (*consent, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("no runner config at %s: spine runner runs tasks only with the apps and in the workspaces its owner allows: write it, e.g. %s (docs/runner.md)",
			path, consentExample)
	}
	if err != nil {
		return nil, err
	}
	c, err := parseConsent(data, filepath.Dir(path))
	if err != nil {
		return nil, fmt.Errorf("runner config %s: %w", path, err)
	}
	return c, nil
}

// parseConsent decodes and checks a runner config, its relative workspaces
// under dir; an unknown field is an error (a misspelt setting must not pass
// silently).
func parseConsent(data []byte, dir string) (*consent, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var c consent
	if err := dec.Decode(&c); err != nil {
		return nil, err
	}
	if len(c.Apps) == 0 {
		return nil, errors.New(`"apps" names no app: allow claude-code or codex`)
	}
	for name, a := range c.Apps {
		if err := a.check(name); err != nil {
			return nil, err
		}
	}
	if len(c.Workspaces) == 0 {
		return nil, fmt.Errorf(`"workspaces" names none: list the directories a task may run in, e.g. %s`, consentExample)
	}
	for i, w := range c.Workspaces {
		if !filepath.IsAbs(w) {
			w = filepath.Join(dir, w)
		}
		abs, err := realDir(w)
		if err != nil {
			return nil, fmt.Errorf("workspace %q: %w", c.Workspaces[i], err)
		}
		c.Workspaces[i] = abs
	}
	return &c, nil
}

func (a appConsent) check(app string) error {
	switch app {
	case "claude-code":
		if a.PermissionMode != "" && !slices.Contains(claudeModes, a.PermissionMode) {
			return fmt.Errorf("claude-code permissionMode %q: want one of %s", a.PermissionMode, strings.Join(claudeModes, ", "))
		}
		if a.Sandbox != "" {
			return errors.New("claude-code has no sandbox setting: use permissionMode and allowedTools")
		}
	case "codex":
		if a.Sandbox != "" && !slices.Contains(codexSandboxes, a.Sandbox) {
			return fmt.Errorf("codex sandbox %q: want one of %s", a.Sandbox, strings.Join(codexSandboxes, ", "))
		}
		if a.PermissionMode != "" || len(a.AllowedTools) > 0 {
			return errors.New("codex has no permissionMode or allowedTools: use sandbox")
		}
	default:
		return fmt.Errorf("app %q: want claude-code or codex", app)
	}
	return nil
}

// realDir is dir made absolute with its symbolic links resolved; it must
// be a directory.
func realDir(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return "", err
	}
	if fi, err := os.Stat(real); err != nil || !fi.IsDir() {
		return "", errors.New("not a directory")
	}
	return real, nil
}

// appNames are the allowed apps, sorted, for registration.
func (c *consent) appNames() []string {
	var names []string
	for n := range c.Apps {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// refusal is a task the consent does not allow, with why.
type refusal struct{ reason string }

func (r *refusal) Error() string { return r.reason }

// allow decides a task: the app it runs (the task's, else Claude Code when
// allowed, else the one allowed) and the directory; a *refusal when the
// task asks for more than the owner allowed.
func (c *consent) allow(t *desktop.Task) (app string, dir string, err error) {
	app = t.App
	if app == "" {
		app = "claude-code"
		if _, ok := c.Apps[app]; !ok {
			app = c.appNames()[0]
		}
	}
	if _, ok := c.Apps[app]; !ok {
		return "", "", &refusal{fmt.Sprintf("app_not_allowed: this desktop does not run %s: its runner config allows %s", app, strings.Join(c.appNames(), ", "))}
	}
	if t.Workspace == "" {
		return app, c.Workspaces[0], nil
	}
	if !filepath.IsAbs(t.Workspace) {
		return "", "", &refusal{fmt.Sprintf("workspace_not_allowed: workspace %q is not an absolute path", t.Workspace)}
	}
	dir, err = realDir(t.Workspace)
	if err != nil {
		return "", "", &refusal{fmt.Sprintf("workspace_not_found: workspace %q is not a directory on this desktop", t.Workspace)}
	}
	for _, w := range c.Workspaces {
		if within(dir, w) {
			return app, dir, nil
		}
	}
	return "", "", &refusal{fmt.Sprintf("workspace_not_allowed: workspace %q is not allowed: this desktop's runner config allows %s", t.Workspace,
		strings.Join(c.Workspaces, ", "))}
}

// within: dir is w or under it (both clean and absolute; w may be "/").
func within(dir, w string) bool {
	return dir == w || strings.HasPrefix(dir, strings.TrimSuffix(w, string(filepath.Separator))+string(filepath.Separator))
}

// appCommand is the app's command line for a task: a new session with the
// prompt, or, with resume (the task's local session), that session
// resumed. The permission flags are the owner's, never the task's; the
// prompt comes after "--" (Claude) or last (Codex), so it is never read as
// a flag.
func (a appConsent) appCommand(app, prompt, resume string) ([]string, apps.Format, error) {
	if err := checkLocalSession(resume); err != nil {
		return nil, "", err
	}
	var args []string
	switch app {
	case "claude-code":
		args = append(args, "-p")
		if a.PermissionMode != "" {
			args = append(args, "--permission-mode", a.PermissionMode)
		}
		if len(a.AllowedTools) > 0 {
			args = append(args, "--allowedTools", strings.Join(a.AllowedTools, ","))
		}
		if resume != "" {
			args = append(args, "--resume="+resume) // one argument: never read as a flag of its own
		}
		args = append(args, a.Args...)
		args = append(args, "--output-format", "stream-json", "--verbose", "--", prompt)
		return args, apps.FormatClaudeStream, nil
	case "codex":
		args = append(args, "exec")
		if resume != "" {
			args = append(args, "resume")
		}
		args = append(args, "--json")
		switch {
		case a.Sandbox != "" && resume != "":
			args = append(args, "-c", fmt.Sprintf("sandbox_mode=%q", a.Sandbox)) // exec resume has no --sandbox
		case a.Sandbox != "":
			args = append(args, "--sandbox", a.Sandbox)
		}
		args = append(append(args, a.Args...), "--")
		if resume != "" {
			args = append(args, resume) // exec resume's SESSION_ID, then its PROMPT, both after "--"
		}
		return append(args, prompt), apps.FormatCodexExec, nil
	}
	return nil, "", fmt.Errorf("app %q: want claude-code or codex", app)
}

// checkLocalSession refuses a follow-up's local session id that is not an
// app's session id (desktop.ValidLocalSessionID, the rule spine holds
// events and tasks to): it goes on the app's command line, where one like
// "--dangerously-skip-permissions" would be a flag the owner never allowed.
func checkLocalSession(id string) error {
	if id == "" || desktop.ValidLocalSessionID(id) {
		return nil
	}
	return &refusal{fmt.Sprintf("invalid_local_session: the local session id to resume is not an app's session id (a UUID): %.40q", id)}
}
