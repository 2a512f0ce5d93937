package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/spinehq/spine/auth"
	"github.com/spinehq/spine/desktop"
	"github.com/spinehq/spine/streams"
)

// Tool names: the whole tool surface.
const (
	ToolSearch  = "search_capabilities"
	ToolExecute = "execute_capability"
)

// Config is what the gateway needs.
type Config struct {
	Desktop *desktop.Service // required
	Signer  *auth.Signer     // required: member tokens
	Logger  *slog.Logger     // nil: discard
	// Version is reported to clients; "" means "dev".
	Version string
}

// Gateway is the MCP endpoint. It is an http.Handler.
type Gateway struct {
	cfg    Config
	log    *slog.Logger
	stream *mcp.StreamableHTTPHandler
}

type ownerKey struct{}

// New returns the endpoint. Each request is verified, then served by a
// stateless MCP server bound to the caller, so no session outlives its token.
func New(cfg Config) *Gateway {
	g := &Gateway{cfg: cfg, log: cfg.Logger}
	if g.log == nil {
		g.log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if g.cfg.Version == "" {
		g.cfg.Version = "dev"
	}
	g.stream = mcp.NewStreamableHTTPHandler(func(r *http.Request) *mcp.Server {
		owner, _ := r.Context().Value(ownerKey{}).(streams.Owner)
		return g.server(owner)
	}, &mcp.StreamableHTTPOptions{Stateless: true, Logger: g.log})
	return g
}

// ServeHTTP requires a member bearer token, then serves MCP.
func (g *Gateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	tok, ok := auth.BearerToken(r)
	if !ok {
		unauthorized(w, "a bearer token is required (spine token mint)")
		return
	}
	c, err := g.cfg.Signer.Verify(tok, auth.AudienceMember, time.Now())
	if err != nil {
		unauthorized(w, "invalid token: "+err.Error())
		return
	}
	owner := streams.Owner{Org: c.Org, Member: c.Member}
	g.stream.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), ownerKey{}, owner)))
}

func unauthorized(w http.ResponseWriter, msg string) {
	w.Header().Set("WWW-Authenticate", `Bearer realm="spine"`)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusUnauthorized)
	_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]string{"code": "unauthorized", "message": msg}})
}

// server is an MCP server for one caller: two tools, the cards.
func (g *Gateway) server(owner streams.Owner) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "spine", Version: g.cfg.Version}, &mcp.ServerOptions{
		Instructions: "spine exposes its capabilities through two tools: search_capabilities to find one, execute_capability to run it.",
		Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{}, Resources: &mcp.ResourceCapabilities{},
			Extensions: map[string]any{uiExtension: map[string]any{"mimeTypes": []string{CardMIMEType}}}},
	})
	s.AddTool(&mcp.Tool{Name: ToolSearch, Title: "Search capabilities",
		Description: "Find what spine can do: returns matching capabilities with their name, summary and argument schema. An empty query lists them all.",
		InputSchema: object(map[string]any{"query": str("words to match, e.g. \"remote session desktop\""),
			"limit": map[string]any{"type": "integer", "minimum": 1, "maximum": 50}}),
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true},
	}, g.searchTool)
	s.AddTool(&mcp.Tool{Name: ToolExecute, Title: "Execute a capability",
		Description: "Run a capability found with search_capabilities: name plus its arguments object.",
		InputSchema: object(map[string]any{"name": str("the capability's name, e.g. remoteSession.create"),
			"arguments": map[string]any{"type": "object", "description": "the capability's arguments (see its schema)"}}, "name"),
		Meta: mcp.Meta{"ui": map[string]any{"resourceUri": CardURI}},
	}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return g.executeTool(ctx, owner, req)
	})
	g.addCards(s, owner)
	return s
}

func (g *Gateway) searchTool(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var in struct {
		Query string `json:"query"`
		Limit int    `json:"limit"`
	}
	if err := unmarshalArgs(req.Params.Arguments, &in); err != nil {
		return toolError("invalid_arguments", err.Error()), nil
	}
	if in.Limit <= 0 || in.Limit > 50 {
		in.Limit = 20
	}
	found := search(g.capabilities(), in.Query, in.Limit)
	return jsonResult(map[string]any{"capabilities": found}), nil
}

func (g *Gateway) executeTool(ctx context.Context, owner streams.Owner, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var in struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	}
	if err := unmarshalArgs(req.Params.Arguments, &in); err != nil {
		return toolError("invalid_arguments", err.Error()), nil
	}
	for _, c := range g.capabilities() {
		if c.Name == in.Name {
			res, err := c.run(ctx, &call{g: g, owner: owner, args: in.Arguments})
			if err != nil {
				return g.capabilityError(in.Name, err), nil
			}
			return res, nil
		}
	}
	return toolError("unknown_capability", fmt.Sprintf("no capability named %q; search_capabilities lists them", in.Name)), nil
}

func unmarshalArgs(raw json.RawMessage, v any) error {
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	if !utf8.Valid(raw) { // as ingest and the runner routes refuse it, never silently U+FFFD
		return streams.Reject(streams.ReasonInvalidUTF8, "arguments are not valid UTF-8")
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return fmt.Errorf("arguments: %v", err)
	}
	return nil
}

// errorBody is a tool error's structured content.
type errorBody struct {
	Error struct {
		Code    string `json:"code"`
		Message string `json:"message"`
		Action  string `json:"action,omitempty"`
		Machine string `json:"machine,omitempty"`
	} `json:"error"`
}

func toolError(code, msg string) *mcp.CallToolResult {
	var b errorBody
	b.Error.Code, b.Error.Message = code, msg
	return errorResult(b)
}

func errorResult(b errorBody) *mcp.CallToolResult {
	text := b.Error.Code + ": " + b.Error.Message
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: text}}, StructuredContent: b}
}

// capabilityError maps a service error to a tool error the agent can act on.
func (g *Gateway) capabilityError(name string, err error) *mcp.CallToolResult {
	var needs *desktop.NeedsRunnerError
	var inv *desktop.InvalidError
	var rej *streams.Rejection
	switch {
	case errors.Is(err, desktop.ErrUnknownSession):
		return toolError("unknown_session", "no such remote session; remoteSession.list shows yours")
	case errors.Is(err, desktop.ErrUnknownRunner):
		return toolError("unknown_runner", "no such desktop runner; remoteSession.list shows your machines")
	case errors.As(err, &needs):
		var b errorBody
		b.Error.Code, b.Error.Action, b.Error.Machine = "needs_desktop_runner", needs.Action, needs.Machine
		b.Error.Message = "no desktop runner is online: " + needs.Action + ". Ask the member to do that, or pass deliverBy to queue until then."
		return errorResult(b)
	case errors.As(err, &inv):
		return toolError("invalid_arguments", inv.Msg)
	case errors.As(err, &rej): // a field over its bound, a time out of range: the rule's own code
		return toolError(rej.Reason, rej.Detail)
	case errors.Is(err, desktop.ErrTooLarge):
		return toolError("too_large", err.Error())
	case errors.Is(err, desktop.ErrBusy):
		return toolError("busy", "spine did not apply the write in time; retry the same call")
	}
	g.log.Error("capability failed", "capability", name, "err", err)
	return toolError("internal", name+" failed; see the spine log")
}

// jsonResult is a result whose text is its structured content as JSON.
func jsonResult(v any) *mcp.CallToolResult {
	data, _ := json.MarshalIndent(v, "", "  ")
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(data)}}, StructuredContent: v}
}
