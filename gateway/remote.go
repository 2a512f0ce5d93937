package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/spinehq/spine/desktop"
	"github.com/spinehq/spine/streams"
)

// decode reads a capability's arguments; bad ones are an InvalidError.
func (c *call) decode(v any) error {
	if err := unmarshalArgs(c.args, v); err != nil {
		if _, ok := streams.AsRejection(err); ok {
			return err
		}
		return &desktop.InvalidError{Msg: err.Error()}
	}
	return nil
}

func runCreate(ctx context.Context, c *call) (*mcp.CallToolResult, error) {
	var req desktop.CreateRequest
	if err := c.decode(&req); err != nil {
		return nil, err
	}
	sess, err := c.g.cfg.Desktop.Create(ctx, c.owner, req)
	if err != nil {
		return nil, err
	}
	return cardResult(sess, map[string]any{"session": sess}), nil
}

func runSend(ctx context.Context, c *call) (*mcp.CallToolResult, error) {
	var in struct {
		SessionID string `json:"sessionId"`
		Prompt    string `json:"prompt"`
	}
	if err := c.decode(&in); err != nil {
		return nil, err
	}
	rec, err := c.g.cfg.Desktop.Send(ctx, c.owner, in.SessionID, in.Prompt)
	if err != nil {
		return nil, err
	}
	sess, err := c.g.cfg.Desktop.Session(ctx, c.owner, in.SessionID)
	if err != nil {
		return nil, err
	}
	return cardResult(sess, map[string]any{"messageId": rec.MessageID, "state": rec.State, "session": sess}), nil
}

func runRead(ctx context.Context, c *call) (*mcp.CallToolResult, error) {
	var in struct {
		SessionID string          `json:"sessionId"`
		Since     json.RawMessage `json:"since"`
		Limit     int             `json:"limit"`
	}
	if err := c.decode(&in); err != nil {
		return nil, err
	}
	since, err := sinceArg(in.Since)
	if err != nil {
		return nil, err
	}
	res, err := c.g.cfg.Desktop.Read(ctx, c.owner, in.SessionID, since, in.Limit)
	if err != nil {
		return nil, err
	}
	return jsonResult(res), nil
}

// sinceArg is read's cursor: the next string of an earlier read, or 0 (a
// number, as agents often pass it) or absent for the start.
func sinceArg(raw json.RawMessage) (string, error) {
	var s string
	switch t := strings.TrimSpace(string(raw)); {
	case t == "" || t == "null" || t == "0":
		return "", nil
	case json.Unmarshal(raw, &s) == nil:
		return s, nil
	}
	return "", &desktop.InvalidError{Msg: `since must be the next string of an earlier read, or 0 from the start`}
}

func runList(ctx context.Context, c *call) (*mcp.CallToolResult, error) {
	var in struct {
		Target string `json:"target"`
	}
	if err := c.decode(&in); err != nil {
		return nil, err
	}
	res, err := c.g.cfg.Desktop.List(ctx, c.owner, in.Target)
	if err != nil {
		return nil, err
	}
	return jsonResult(res), nil
}

func runCancel(ctx context.Context, c *call) (*mcp.CallToolResult, error) {
	var in struct {
		SessionID string `json:"sessionId"`
	}
	if err := c.decode(&in); err != nil {
		return nil, err
	}
	sess, err := c.g.cfg.Desktop.Cancel(ctx, c.owner, in.SessionID)
	if err != nil {
		return nil, err
	}
	return jsonResult(map[string]any{"session": sess}), nil
}

// cardResult is a create or send result: the structured answer, the same
// content as plain text, and _meta.ui.resourceUri naming the session's card.
func cardResult(sess *desktop.Session, structured map[string]any) *mcp.CallToolResult {
	data, _ := json.Marshal(structured)
	return &mcp.CallToolResult{
		Meta: mcp.Meta{"ui": map[string]any{"resourceUri": SessionCardURI(sess.ID)}},
		Content: []mcp.Content{
			&mcp.TextContent{Text: cardText(sess)},
			&mcp.TextContent{Text: string(data)},
		},
		StructuredContent: structured,
	}
}

// cardText is the card for clients without MCP Apps.
func cardText(s *desktop.Session) string {
	title := s.Title
	if title == "" {
		title = "Remote session " + s.ID
	}
	machine := s.Machine
	if machine == "" {
		machine = "the first of your desktops to come online"
	}
	return fmt.Sprintf("%s\nsession: %s\nstate: %s\nmachine: %s\nlast activity: %s\nopen: %s",
		title, s.ID, s.State, machine, s.LastActivityAt.UTC().Format("2006-01-02 15:04:05 UTC"), s.URL)
}
