package server

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"html/template"
	"net/http"
	"time"

	"github.com/spinehq/spine/desktop"
)

// sessionPageRoutes: a remote session's page, server-rendered and live.
// It signs in like every /ui page (authedPage: the spine_token cookie, set
// once from ?token=). Live updates come from a few lines of inline script
// listening to /ui/sessions/{id}/events; without script the page refreshes
// itself every 5 s while the session runs.
func (s *Server) sessionPageRoutes() {
	s.mux.Handle("GET /ui/sessions/{id}", s.authedPage(s.sessionPage))
	s.mux.Handle("GET /ui/sessions/{id}/events", s.authedPage(s.sessionPageEvents))
}

type sessionView struct {
	*desktop.ReadResult
	Nonce    string
	Fragment bool
}

func (s *Server) sessionPage(w http.ResponseWriter, r *http.Request) {
	res, err := s.cfg.Desktop.Read(r.Context(), s.owner(r), r.PathValue("id"), 0, desktop.MaxReadLimit)
	if errors.Is(err, desktop.ErrUnknownSession) {
		writePageError(w, http.StatusNotFound, "remote session not found")
		return
	}
	if err != nil {
		s.log.Error("session page failed", "err", err)
		writePageError(w, http.StatusInternalServerError, "reading the session failed; see the server log")
		return
	}
	v := sessionView{ReadResult: res, Nonce: nonce(), Fragment: r.URL.Query().Get("fragment") == "1"}
	var b bytes.Buffer
	name := "page"
	if v.Fragment {
		name = "live"
	}
	if err := sessionTmpl.ExecuteTemplate(&b, name, v); err != nil {
		s.log.Error("render session page", "err", err)
		writePageError(w, http.StatusInternalServerError, "rendering failed")
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cache-Control", "no-store")
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; connect-src 'self'; script-src 'nonce-"+v.Nonce+"'")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(b.Bytes())
}

func nonce() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// sessionPageEvents tells an open page that its session changed (event
// "change"); the page then fetches its live part again.
func (s *Server) sessionPageEvents(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	ch, cancel := s.cfg.Desktop.Changes(id)
	defer cancel()
	sess, err := s.cfg.Desktop.Session(r.Context(), s.owner(r), id)
	if err != nil {
		s.desktopError(w, "watch session", err)
		return
	}
	flusher, ok := w.(http.Flusher)
	if !ok {
		writeError(w, http.StatusInternalServerError, CodeInternal, "streaming unsupported")
		return
	}
	startSSE(w)
	writeSSE(w, "ready", map[string]any{"state": sess.State, "version": sess.Version})
	flusher.Flush()
	tick := time.NewTicker(sseKeepAlive)
	defer tick.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case _, open := <-ch:
			if !open {
				return
			}
			writeSSE(w, "change", map[string]any{"sessionId": id})
		case <-tick.C:
			_, _ = w.Write([]byte(": keepalive\n\n"))
		}
		flusher.Flush()
	}
}

var sessionTmpl = template.Must(template.New("page").Funcs(template.FuncMap{
	"when": func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05 UTC") },
}).Parse(`{{define "page"}}<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<title>{{with .Session}}{{if .Title}}{{.Title}}{{else}}Remote session {{.ID}}{{end}}{{end}} · spine</title>
{{if not .Ended}}<noscript><meta http-equiv="refresh" content="5"></noscript>{{end}}
<style>
body{font:15px/1.45 system-ui,sans-serif;max-width:860px;margin:2em auto;padding:0 1em;color:#222}
dl{display:grid;grid-template-columns:max-content 1fr;gap:.2em 1em}dt{color:#666}
.state{padding:1px 7px;border-radius:4px;background:#eee}.done{background:#d6f5d6}.running,.claimed{background:#dbe9ff}
.interrupted,.expired,.cancelled{background:#fde2e2}
ol{list-style:none;padding:0}li{border-top:1px solid #eee;padding:.5em 0}.kind{color:#888;font-size:12px;text-transform:uppercase}
.prompt .text{font-weight:600}pre{white-space:pre-wrap;margin:.2em 0;font:inherit}
</style></head>
<body>
<div id="live">{{template "live" .}}</div>
<script nonce="{{.Nonce}}">
(function () {
  if (!window.EventSource) return;
  var live = document.getElementById('live'), path = location.pathname;
  var es = new EventSource(path + '/events');
  es.addEventListener('ready', function () { document.documentElement.dataset.live = 'on'; });
  es.addEventListener('change', function () {
    fetch(path + '?fragment=1', {credentials: 'same-origin'}).then(function (r) { return r.ok ? r.text() : null; })
      .then(function (html) { if (html !== null) live.innerHTML = html; });
  });
})();
</script>
</body></html>{{end}}
{{define "live"}}{{with .Session}}
<h1>{{if .Title}}{{.Title}}{{else}}Remote session {{.ID}}{{end}}</h1>
<dl>
<dt>status</dt><dd><span class="state {{.State}}" id="state">{{.State}}</span>{{if .Error}} — {{.Error}}{{end}}</dd>
<dt>machine</dt><dd>{{if .Machine}}{{.Machine}}{{else}}any of your desktops (queued){{end}}</dd>
<dt>last activity</dt><dd>{{when .LastActivityAt}}</dd>
<dt>session</dt><dd>{{.ID}}{{if .LocalSessionID}} (desktop session {{.LocalSessionID}}){{end}}</dd>
</dl>{{end}}
<h2>Transcript</h2>
<ol id="transcript">{{range .Entries}}
<li class="{{.Kind}}" data-pos="{{.Pos}}"><span class="kind">{{.Kind}} · {{when .At}}</span>{{if .Text}}<pre class="text">{{.Text}}</pre>{{end}}{{if .Data}}<pre class="data">{{printf "%s" .Data}}</pre>{{end}}</li>{{else}}
<li>Nothing yet.</li>{{end}}
</ol>{{if .More}}<p>Only the first {{len .Entries}} entries are shown; read on with remoteSession.read from since={{.Next}}.</p>{{end}}{{end}}`))
