// Command mcpserver is the MCP stdio server the real-app tests give Claude
// Code and Codex (as server "spine"): tools that succeed (echo, add) and one
// that always fails with isError (fail), so an import can be checked for
// both outcomes. apprig.MCPServer builds it.
package main

import (
	"context"
	"errors"
	"log"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type echoIn struct {
	Text string `json:"text" jsonschema:"the text to send back"`
}

type echoOut struct {
	Text string `json:"text"`
}

type addIn struct {
	A int `json:"a" jsonschema:"the first addend"`
	B int `json:"b" jsonschema:"the second addend"`
}

type addOut struct {
	Sum int `json:"sum"`
}

type failIn struct {
	Reason string `json:"reason" jsonschema:"why the call fails"`
}

func main() {
	s := mcp.NewServer(&mcp.Implementation{Name: "spine-apprig", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "Send the text back."}, echo)
	mcp.AddTool(s, &mcp.Tool{Name: "add", Description: "Add two integers."}, add)
	mcp.AddTool(s, &mcp.Tool{Name: "fail", Description: "Always fail, with the reason given."}, fail)
	if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		log.Fatal(err)
	}
}

func echo(_ context.Context, _ *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, echoOut, error) {
	return nil, echoOut(in), nil
}

func add(_ context.Context, _ *mcp.CallToolRequest, in addIn) (*mcp.CallToolResult, addOut, error) {
	return nil, addOut{Sum: in.A + in.B}, nil
}

// fail returns a tool error: the SDK sends it as a result with isError.
func fail(_ context.Context, _ *mcp.CallToolRequest, in failIn) (*mcp.CallToolResult, any, error) {
	return nil, nil, errors.New("fail: " + in.Reason)
}
