package server

import (
	"bytes"
	"context"
	"net/http"
	"net/url"
	"time"

	"github.com/spinehq/spine/auth"
	"github.com/spinehq/spine/server/pages"
	"github.com/spinehq/spine/streams"
)

// TokenCookie holds a member's bearer token for spine's pages, which a
// browser opens without an Authorization header.
const TokenCookie = "spine_token"

// uiRoutes: the pages under /ui, rendered one way (server/pages), and the
// one stylesheet and script they link.
func (s *Server) uiRoutes() {
	s.mux.Handle("GET /ui/assets/", http.StripPrefix("/ui/assets/", assetServer()))
	s.mux.HandleFunc("GET /ui/{$}", toSessions)
	s.remoteListPageRoutes()
	s.deadLetterPageRoutes()
	s.sessionPageRoutes()
	s.sessionsPageRoutes()
	s.provenancePageRoutes()
	s.planPageRoutes()
}

// toSessions sends /ui/ to the sessions list with its query, so the
// quickstart's /ui/?token= signs in there.
func toSessions(w http.ResponseWriter, r *http.Request) {
	u := url.URL{Path: "/ui/sessions", RawQuery: r.URL.RawQuery}
	http.Redirect(w, r, u.String(), http.StatusSeeOther)
}

// assetServer serves pages.Assets; a link carries the assets' version, so
// a browser may keep what it fetched.
func assetServer() http.Handler {
	files := http.FileServerFS(pages.Assets())
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Content-Type-Options", "nosniff")
		if r.URL.Query().Get("v") == pages.AssetVersion {
			w.Header().Set("Cache-Control", "public, max-age=31536000, immutable")
		}
		files.ServeHTTP(w, r)
	})
}

// authedPage requires a member token on a server-rendered page: from the
// Authorization header, the spine_token cookie, or once from ?token=, which
// sets the cookie (HttpOnly, SameSite=Strict) and redirects to the same URL
// without the token, so it stays out of history and logs.
func (s *Server) authedPage(h http.HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		if tok := q.Get("token"); tok != "" {
			if _, err := s.cfg.Signer.Verify(tok, auth.AudienceMember, time.Now()); err != nil {
				writePageError(w, http.StatusUnauthorized, "invalid token: "+err.Error())
				return
			}
			http.SetCookie(w, &http.Cookie{Name: TokenCookie, Value: tok, Path: "/ui/", HttpOnly: true,
				SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil})
			q.Del("token")
			u := url.URL{Path: r.URL.Path, RawQuery: q.Encode()}
			http.Redirect(w, r, u.String(), http.StatusSeeOther)
			return
		}
		tok, ok := auth.BearerToken(r)
		if !ok {
			if c, err := r.Cookie(TokenCookie); err == nil {
				tok, ok = c.Value, true
			}
		}
		if !ok {
			writePageError(w, http.StatusUnauthorized, "sign in: open this page once with ?token=$(spine token mint)")
			return
		}
		claims, err := s.cfg.Signer.Verify(tok, auth.AudienceMember, time.Now())
		if err != nil {
			writePageError(w, http.StatusUnauthorized, "invalid token: "+err.Error()+"; open this page with ?token=$(spine token mint)")
			return
		}
		h(w, r.WithContext(context.WithValue(r.Context(), ctxKey{}, claims)))
	})
}

// scope is what a page of the caller's may show: the whole org for an
// admin (Member ""), else the caller's own, as the cost API counts.
func scope(r *http.Request) streams.Owner {
	c := caller(r)
	return streams.Owner{Org: c.Org, Member: summaryScope(c)}
}

// view starts a page's View: its title and section, for the caller.
func view(r *http.Request, section, title string, data any) pages.View {
	c := caller(r)
	return pages.View{Title: title, Section: section, Data: data,
		Viewer: pages.Viewer{Org: c.Org, Member: c.Member, Admin: c.IsAdmin()}}
}

// fragment reports whether the request asks for a page's live part alone
// (spine.js adds fragment=1).
func fragment(r *http.Request) bool { return r.URL.Query().Get("fragment") == "1" }

// page renders the template called name and writes it with every page's
// headers: the stylesheet and script are spine's own files, nothing inline
// runs. It answers 500 (a page saying so) when rendering fails.
func (s *Server) page(w http.ResponseWriter, status int, name string, v pages.View) {
	var b bytes.Buffer
	if err := pages.Render(&b, name, v); err != nil {
		s.log.Error("render page", "page", name, "err", err)
		writePageError(w, http.StatusInternalServerError, "rendering failed; see the server log")
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	writeHTML(w, status, b.Bytes())
}

// pageCSP allows the assets under /ui/assets and nothing else: no inline
// script or style, fetches and event streams to spine alone.
const pageCSP = "default-src 'none'; style-src 'self'; script-src 'self'; connect-src 'self'; img-src 'self'; " +
	"form-action 'self'; base-uri 'none'; frame-ancestors 'none'"

func writeHTML(w http.ResponseWriter, status int, body []byte) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Content-Security-Policy", pageCSP)
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

func writePageError(w http.ResponseWriter, status int, msg string) {
	var b bytes.Buffer
	_ = pages.Error(&b, msg) // a string into a buffer: nothing to fail
	writeHTML(w, status, b.Bytes())
}

// pageMessage answers with a page in the frame that says msg: what a 404
// (the same for another member's thing as for a missing one) or a 400 is.
func (s *Server) pageMessage(w http.ResponseWriter, r *http.Request, status int, section, title, msg string) {
	s.page(w, status, "message", view(r, section, title, msg))
}

// pageFailed logs a page's failed read and answers 500 with a page that
// says so (never the error itself: it may name what the caller cannot see).
func (s *Server) pageFailed(w http.ResponseWriter, what string, err error) {
	s.log.Error(what+" failed", "err", err)
	writePageError(w, http.StatusInternalServerError, what+" failed; see the server log")
}
