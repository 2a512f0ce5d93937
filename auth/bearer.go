package auth

import (
	"net/http"
	"strings"
)

// BearerToken returns the token of an "Authorization: Bearer <token>" header.
// The scheme is matched without regard to case (RFC 9110 §11.1). It reports
// false when the header is missing, has another scheme, or has no token or a
// token with spaces in it.
func BearerToken(r *http.Request) (string, bool) {
	scheme, token, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	token = strings.TrimSpace(token)
	if token == "" || strings.ContainsAny(token, " \t") {
		return "", false
	}
	return token, true
}
