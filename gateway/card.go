package gateway

import (
	"bytes"
	"context"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/spinehq/spine/desktop"
	"github.com/spinehq/spine/server/pages"
	"github.com/spinehq/spine/streams"
)

// MCP Apps names (the io.modelcontextprotocol/ui extension).
const (
	uiExtension  = "io.modelcontextprotocol/ui"
	CardMIMEType = "text/html;profile=mcp-app"
	// CardURI is the generic card execute_capability lists: it renders the
	// session of whatever result the host hands it over the Apps bridge.
	CardURI = "ui://spine/remote-session-card"
	// cardPrefix + session id is one session's card, rendered on the server.
	cardPrefix = "ui://spine/remote-session/"
)

// SessionCardURI is the card of one session.
func SessionCardURI(id string) string { return cardPrefix + id }

func (g *Gateway) addCards(s *mcp.Server, owner streams.Owner) {
	s.AddResource(&mcp.Resource{URI: CardURI, Name: "remote-session-card", MIMEType: CardMIMEType,
		Title: "Remote session card", Description: "A remote session's title, state, last activity and link, from the tool result."},
		func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: CardURI, MIMEType: CardMIMEType, Text: pages.GenericCard()}}}, nil
		})
	s.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: cardPrefix + "{id}", Name: "remote-session",
		MIMEType: CardMIMEType, Title: "One remote session's card"},
		func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			uri := req.Params.URI
			sess, err := g.cfg.Desktop.Session(ctx, owner, strings.TrimPrefix(uri, cardPrefix))
			if err != nil {
				return nil, mcp.ResourceNotFoundError(uri) // another member's is the same answer
			}
			html, err := renderCard(sess)
			if err != nil {
				return nil, err
			}
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, MIMEType: CardMIMEType, Text: html}}}, nil
		})
}

func renderCard(s *desktop.Session) (string, error) {
	var b bytes.Buffer
	err := pages.Card(&b, s)
	return b.String(), err
}
