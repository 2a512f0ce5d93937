package apprig

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
)

// The rig's MCP server is built once per test binary (again after
// RemoveBuilt).
var mcpBuild struct {
	mu   sync.Mutex
	dir  string // "" until built
	path string
}

// MCPServer is the path of the rig's MCP stdio server (./mcpserver: tools
// echo and add, which succeed, and fail, which returns isError), built
// once per test binary into a temporary directory that RemoveBuilt
// removes (call it from the package's TestMain). Claude Code gets it
// through NewClaude's ClaudeOptions.MCP; Codex through its config.toml.
func MCPServer(tb testing.TB) string {
	tb.Helper()
	mcpBuild.mu.Lock()
	defer mcpBuild.mu.Unlock()
	if mcpBuild.dir != "" {
		return mcpBuild.path
	}
	dir, err := os.MkdirTemp("", "spine-apprig-mcp-")
	if err != nil {
		tb.Fatalf("apprig: build the MCP server: %v", err)
	}
	path := filepath.Join(dir, "mcpserver")
	cmd := exec.Command(goTool(), "build", "-o", path, "./internal/apprig/mcpserver")
	cmd.Dir = RepoRoot(tb)
	if out, err := cmd.CombinedOutput(); err != nil {
		os.RemoveAll(dir) //nolint:errcheck // best effort; the build failed
		tb.Fatalf("apprig: build the MCP server: %v\n%s", err, out)
	}
	mcpBuild.dir, mcpBuild.path = dir, path
	return path
}

// RemoveBuilt removes what the rig built for this test binary (the MCP
// server). A package whose tests use MCPServer calls it from TestMain once
// its tests have run.
func RemoveBuilt() {
	mcpBuild.mu.Lock()
	defer mcpBuild.mu.Unlock()
	if mcpBuild.dir != "" {
		os.RemoveAll(mcpBuild.dir) //nolint:errcheck // a temporary directory; nothing to do about a failure
		mcpBuild.dir, mcpBuild.path = "", ""
	}
}

// goTool is the go command that built this test binary, else go on PATH.
func goTool() string {
	p := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := os.Stat(p); err == nil {
		return p
	}
	return "go"
}
