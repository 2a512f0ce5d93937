package apprig

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The Makefile installs what the rig runs: the same versions, the binaries
// where the rig looks for them.
func TestMakefileAgrees(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(RepoRoot(t), "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	vars := map[string]string{}
	for _, m := range regexp.MustCompile(`(?m)^([A-Z_]+) *:= *(.*?) *$`).FindAllStringSubmatch(string(b), -1) {
		vars[m[1]] = m[2]
	}
	expand := func(v string) string {
		return regexp.MustCompile(`\$\(([A-Z_]+)\)`).ReplaceAllStringFunc(v, func(ref string) string {
			return vars[strings.Trim(ref, "$()")]
		})
	}
	for _, c := range []struct{ name, want string }{
		{"CLAUDE_CODE_VERSION", ClaudeVersion},
		{"CODEX_VERSION", CodexVersion},
		{"CLAUDE_BIN", filepath.Join("bin", claudeRel)},
		{"CODEX_BIN", filepath.Join("bin", codexRel)},
	} {
		if got := expand(vars[c.name]); got != c.want {
			t.Errorf("Makefile %s = %q, the rig's %q", c.name, got, c.want)
		}
	}
}
