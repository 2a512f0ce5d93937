package apprig

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
)

// The rig's MCP server is built once per test binary.
var mcpBuild struct {
	once sync.Once
	path string
	err  error
	out  []byte
}

// MCPServer is the path of the rig's MCP stdio server (./mcpserver: tools
// echo and add, which succeed, and fail, which returns isError), built
// once per test binary into a temporary directory. Claude Code gets it
// through NewClaude's ClaudeOptions.MCP; Codex through its config.toml.
func MCPServer(tb testing.TB) string {
	tb.Helper()
	mcpBuild.once.Do(func() {
		dir, err := os.MkdirTemp("", "spine-apprig-mcp-")
		if err != nil {
			mcpBuild.err = err
			return
		}
		mcpBuild.path = filepath.Join(dir, "mcpserver")
		cmd := exec.Command(goTool(), "build", "-o", mcpBuild.path, "./internal/apprig/mcpserver")
		cmd.Dir = RepoRoot(tb)
		mcpBuild.out, mcpBuild.err = cmd.CombinedOutput()
	})
	if mcpBuild.err != nil {
		tb.Fatalf("apprig: build the MCP server: %v\n%s", mcpBuild.err, mcpBuild.out)
	}
	return mcpBuild.path
}

// goTool is the go command that built this test binary, else go on PATH.
func goTool() string {
	p := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := os.Stat(p); err == nil {
		return p
	}
	return "go"
}
