package gateway

import (
	"bytes"
	"context"
	"html/template"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/spinehq/spine/desktop"
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

func (g *Gateway) addCards(s *mcp.Server, owner desktop.Owner) {
	s.AddResource(&mcp.Resource{URI: CardURI, Name: "remote-session-card", MIMEType: CardMIMEType,
		Title: "Remote session card", Description: "A remote session's title, state, last activity and link, from the tool result."},
		func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: CardURI, MIMEType: CardMIMEType, Text: genericCard}}}, nil
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

var cardTmpl = template.Must(template.New("card").Parse(`<!doctype html>
<html><head><meta charset="utf-8"><title>{{.Title}}</title><style>` + cardCSS + `</style></head>
<body><div class="card">
<div class="title">{{if .Title}}{{.Title}}{{else}}Remote session {{.ID}}{{end}}</div>
<div class="row"><span class="state {{.State}}">{{.State}}</span>{{if .Machine}} on {{.Machine}}{{end}}</div>
<div class="row muted">last activity {{.LastActivityAt.UTC.Format "2006-01-02 15:04:05 UTC"}}</div>
<a href="{{.URL}}" target="_blank" rel="noopener">Open on spine</a>
</div></body></html>`))

func renderCard(s *desktop.Session) (string, error) {
	var b bytes.Buffer
	err := cardTmpl.Execute(&b, s)
	return b.String(), err
}

const cardCSS = `body{font:14px system-ui,sans-serif;margin:0}.card{border:1px solid #ddd;border-radius:8px;padding:12px}
.title{font-weight:600;margin-bottom:6px}.row{margin:4px 0}.muted{color:#666}.state{padding:1px 6px;border-radius:4px;background:#eee}
.done{background:#d6f5d6}.running,.claimed{background:#dbe9ff}.interrupted,.expired,.cancelled{background:#fde2e2}`

// genericCard renders the session in a tool result the host delivers over
// the MCP Apps bridge (ui/notifications/tool-result). Without a host it
// shows a hint; the result's text carries the same content.
const genericCard = `<!doctype html>
<html><head><meta charset="utf-8"><title>Remote session</title><style>` + cardCSS + `</style></head>
<body><div class="card" id="card"><div class="muted">Waiting for the session…</div></div>
<script>
(function () {
  var card = document.getElementById('card');
  function text(cls, s) { var d = document.createElement('div'); d.className = cls; d.textContent = s; return d; }
  function render(r) {
    var s = r && r.structuredContent && r.structuredContent.session;
    if (!s) { card.replaceChildren(text('muted', 'No remote session in this result.')); return; }
    var a = document.createElement('a'); a.href = s.url; a.target = '_blank'; a.rel = 'noopener'; a.textContent = 'Open on spine';
    card.replaceChildren(text('title', s.title || ('Remote session ' + s.sessionId)),
      text('row', s.state + (s.machine ? ' on ' + s.machine : '')), text('row muted', 'last activity ' + s.lastActivityAt), a);
  }
  window.addEventListener('message', function (e) {
    var m = e.data || {};
    if (m.method === 'ui/notifications/tool-result') render(m.params);
    if (m.id === 1 && m.result) parent.postMessage({jsonrpc: '2.0', method: 'ui/notifications/initialized', params: {}}, '*');
  });
  parent.postMessage({jsonrpc: '2.0', id: 1, method: 'ui/initialize',
    params: {appInfo: {name: 'spine-remote-session-card', version: '1'}, appCapabilities: {}, protocolVersion: '2026-01-26'}}, '*');
})();
</script></body></html>`
