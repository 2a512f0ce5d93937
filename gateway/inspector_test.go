package gateway_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The MCP Inspector CLI (npm, pinned in scripts/mcp-inspector.sh) drives
// /mcp as an external client would. It runs wherever npx, jq and psql are
// installed (.ci/run installs them); `make mcp-inspector` runs it alone.
func TestMCPInspectorCLI(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: skips the MCP Inspector CLI")
	}
	for _, tool := range []string{"npx", "jq", "psql"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed: make mcp-inspector needs npx, jq and psql", tool)
		}
	}
	bin := filepath.Join(t.TempDir(), "spine")
	if out, err := exec.Command("go", "build", "-o", bin, "../cmd/spine").CombinedOutput(); err != nil {
		t.Fatalf("build spine: %v\n%s", err, out)
	}
	cmd := exec.Command("bash", "../scripts/mcp-inspector.sh")
	cmd.Env = append(os.Environ(), "SPINE_BIN="+bin)
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.HasSuffix(strings.TrimSpace(string(out)), "ok") {
		t.Fatalf("mcp-inspector.sh: %v\n%s", err, out)
	}
	t.Logf("%s", out)
}
