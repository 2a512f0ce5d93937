package server

import (
	"bytes"
	"context"
	"net/http"
	"net/url"
	"time"

	"github.com/spinehq/spine/auth"
	"github.com/spinehq/spine/server/pages"
)

// TokenCookie holds a member's bearer token for spine's pages, which a
// browser opens without an Authorization header.
const TokenCookie = "spine_token"

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

func writeHTML(w http.ResponseWriter, status int, body []byte) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; img-src 'self'; form-action 'self'")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

func writePageError(w http.ResponseWriter, status int, msg string) {
	var b bytes.Buffer
	_ = pages.Error(&b, msg) // a string into a buffer: nothing to fail
	writeHTML(w, status, b.Bytes())
}
