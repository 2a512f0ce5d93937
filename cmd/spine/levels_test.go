package main

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/spinehq/spine/internal/apprig"
	"github.com/spinehq/spine/internal/fakemodel"
)

// A level adds its app's flags from the built-in table, or from
// levels.json where the owner overrode it; a flag the user set too is
// refused, as are embeddings and an unknown level.
func TestRunLevelArgs(t *testing.T) {
	table, err := loadLevels(filepath.Join(t.TempDir(), "none.json"))
	if err != nil {
		t.Fatal(err)
	}
	claude, _, _ := appArgs("claude-code", []string{"hi"})
	got, err := withLevel(table, "claude-code", "reasoning", claude)
	if want := append(slices.Clone(claude), "--model", "opus", "--effort", "high"); err != nil || !slices.Equal(got, want) {
		t.Fatalf("claude reasoning: %q, %v; want %q", got, err, want)
	}
	codex, _, _ := appArgs("codex", []string{"-c", "sandbox_mode=read-only", "hi"})
	got, err = withLevel(table, "codex", "fast", codex)
	if want := []string{"exec", "--json", "-c", "model_reasoning_effort=low", "-c", "sandbox_mode=read-only", "hi"}; err != nil || !slices.Equal(got, want) {
		t.Fatalf("codex fast: %q, %v; want %q", got, err, want)
	}
	for _, bad := range []struct {
		app, level string
		args       []string
	}{
		{"claude-code", "fast", []string{"-p", "hi", "--model", "opus"}},
		{"codex", "fast", []string{"exec", "--json", "-c", "model_reasoning_effort=high", "hi"}},
		{"claude-code", "embeddings", claude},
		{"claude-code", "fastest", claude},
	} {
		if _, err := withLevel(table, bad.app, bad.level, bad.args); err == nil {
			t.Errorf("%s --level %s %q accepted", bad.app, bad.level, bad.args)
		}
	}
	if _, _, err := appArgs("embeddings", nil); err == nil || !strings.Contains(err.Error(), "embeddings is refused") {
		t.Errorf("--app embeddings: %v", err)
	}

	path := filepath.Join(t.TempDir(), "levels.json")
	over, _ := json.Marshal(levelTable{"codex": {"fast": {"-m", "gpt-small"}}})
	if err := os.WriteFile(path, over, 0o600); err != nil {
		t.Fatal(err)
	}
	table, err = loadLevels(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := table["codex"]["fast"]; !slices.Equal(got, []string{"-m", "gpt-small"}) || len(table["codex"]["strong"]) == 0 {
		t.Fatalf("overridden table: %q", table["codex"])
	}
	for _, bad := range []string{`{"codex": {"embeddings": []}}`, `{"cursor": {"fast": []}}`, `{"codex": []}`} {
		if err := os.WriteFile(path, []byte(bad), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := loadLevels(path); err == nil {
			t.Errorf("levels.json %s accepted", bad)
		}
	}
	var u usageError
	if _, err := capture(t, "run", "--level", "embeddings", "--bin", "/bin/true", "--", "hi"); !errors.As(err, &u) {
		t.Errorf("spine run --level embeddings: %v, want a usage error", err)
	}
}

// The real apps at a level: Claude Code at fast asks the model API for a
// Haiku model, Codex at reasoning for high effort, and the session's
// start says the level.
func TestRunLevelRealApps(t *testing.T) {
	t.Run("claude-code", func(t *testing.T) {
		testNode(t)
		srv := fakemodel.Start(t)
		srv.Anthropic(fakemodel.Turn{Blocks: []fakemodel.Block{fakemodel.Text("quick")}, Usage: fakemodel.Usage{Input: 5, Output: 2}})
		c := apprig.NewClaude(t, srv, nil)
		out, err := capture(t, "run", "--json", "--level", "fast", "--bin", appWrapper(t, c.Bin, c.Dir, c.Env(), ""), "--", "hi")
		if err != nil {
			t.Fatalf("spine run: %v\n%s", err, out)
		}
		var req struct{ Model string }
		log := srv.Log()
		if len(log) == 0 || json.Unmarshal(log[0].Request, &req) != nil || !strings.Contains(req.Model, "haiku") {
			t.Fatalf("Claude Code at fast asked for %q", req.Model)
		}
		if firstValue([]byte(out), "level") != "fast" {
			t.Fatalf("the start does not say the level:\n%s", out)
		}
	})
	t.Run("codex", func(t *testing.T) {
		testNode(t)
		srv := fakemodel.Start(t)
		srv.OpenAI(fakemodel.Turn{Blocks: []fakemodel.Block{fakemodel.Text("deep")}, Usage: fakemodel.Usage{Input: 50, Output: 5}})
		c := apprig.NewCodex(t, srv, nil)
		out, err := capture(t, "run", "--app", "codex", "--json", "--level", "reasoning", "--bin",
			appWrapper(t, c.Bin, c.Dir, c.Env(t), ""), "--", "--skip-git-repo-check", "hi")
		if err != nil {
			t.Fatalf("spine run: %v\n%s", err, out)
		}
		var req struct{ Reasoning struct{ Effort string } }
		log := srv.Log()
		if len(log) == 0 || json.Unmarshal(log[0].Request, &req) != nil || req.Reasoning.Effort != "high" {
			t.Fatalf("Codex at reasoning asked for effort %q", req.Reasoning.Effort)
		}
		if firstValue([]byte(out), "level") != "reasoning" {
			t.Fatalf("the start does not say the level:\n%s", out)
		}
	})
}
