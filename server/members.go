package server

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/spinehq/spine/members"
	"github.com/spinehq/spine/streams"
)

// Who the telemetry doors record an org's ingest token as: an admin maps
// the identities the apps report to members, and reads those nobody
// mapped (docs/telemetry.md#identity). Every route is an org admin's.
func (s *Server) memberRoutes() {
	s.mux.Handle("POST /v1/members/identities", s.authed(adminOnly(s.mapIdentity)))
	s.mux.Handle("GET /v1/members/identities", s.authed(adminOnly(s.listIdentities)))
	s.mux.Handle("DELETE /v1/members/identities", s.authed(adminOnly(s.unmapIdentity)))
	s.mux.Handle("GET /v1/members/unmapped", s.authed(adminOnly(s.listUnmapped)))
}

// adminOnly answers a member's token 403 admin_required before h reads
// anything: who an identity is, and who was not mapped, are the org's.
func adminOnly(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if !caller(r).IsAdmin() {
			writeError(w, http.StatusForbidden, CodeAdminRequired,
				"mapping the apps' identities to members takes an org admin's token (spine token mint --role admin)")
			return
		}
		h(w, r)
	}
}

// MapRequest maps one identity (kind email, account or user) to a member
// of the caller's org.
type MapRequest struct {
	Kind   string `json:"kind"`
	Value  string `json:"value"`
	Member string `json:"member"`
}

// maxMapBody bounds a mapping request's body.
const maxMapBody = 4 << 10

func (s *Server) mapIdentity(w http.ResponseWriter, r *http.Request) {
	var req MapRequest
	if err := decodeStrict(w, r, maxMapBody, &req); err != nil {
		writeError(w, http.StatusBadRequest, CodeBadRequest, err.Error())
		return
	}
	id, err := members.Parse(req.Kind, req.Value)
	if err != nil {
		writeError(w, http.StatusBadRequest, CodeBadRequest, err.Error())
		return
	}
	c := caller(r)
	m, err := members.Map(r.Context(), s.cfg.Pool, c.Org, id, req.Member, c.Member, time.Now())
	if errors.Is(err, members.ErrMember) {
		writeError(w, http.StatusBadRequest, CodeBadRequest, err.Error())
		return
	}
	if err != nil {
		s.internal(w, "map identity", err)
		return
	}
	writeJSON(w, http.StatusOK, m)
}

// unmapIdentity removes ?kind=&value='s mapping: 404 when there was none.
func (s *Server) unmapIdentity(w http.ResponseWriter, r *http.Request) {
	id, err := members.Parse(r.URL.Query().Get("kind"), r.URL.Query().Get("value"))
	if err != nil {
		writeError(w, http.StatusBadRequest, CodeBadRequest, err.Error())
		return
	}
	err = members.Unmap(r.Context(), s.cfg.Pool, caller(r).Org, id)
	if errors.Is(err, members.ErrNotMapped) {
		notFound(w, "identity mapping")
		return
	}
	if err != nil {
		s.internal(w, "unmap identity", err)
		return
	}
	writeJSON(w, http.StatusOK, id)
}

// IdentityList is a page of GET /v1/members/identities.
type IdentityList struct {
	Identities []members.Mapping `json:"identities"`
	// Next is the after of the next page (KIND:VALUE); More says whether
	// there is one.
	Next string `json:"next,omitempty"`
	More bool   `json:"more"`
}

func (s *Server) listIdentities(w http.ResponseWriter, r *http.Request) {
	list, next, more, ok := identityPage(s, w, r, members.List, func(m members.Mapping) members.Identity { return m.Identity })
	if ok {
		writeJSON(w, http.StatusOK, IdentityList{Identities: list, Next: next, More: more})
	}
}

// UnmappedList is a page of GET /v1/members/unmapped: the identities an
// ingest token's events carried that no mapping names, and the machines
// and apps of those that named no user (kinds machine and none).
type UnmappedList struct {
	Unmapped []members.Unmapped `json:"unmapped"`
	Next     string             `json:"next,omitempty"`
	More     bool               `json:"more"`
}

func (s *Server) listUnmapped(w http.ResponseWriter, r *http.Request) {
	list, next, more, ok := identityPage(s, w, r, members.ListUnmapped, func(u members.Unmapped) members.Identity { return u.Identity })
	if ok {
		writeJSON(w, http.StatusOK, UnmappedList{Unmapped: list, Next: next, More: more})
	}
}

// identityPage reads one page of the caller's org's rows of a list of
// identities (list), with the next page's cursor (id names a row). It
// answers the request itself when it cannot (ok false).
func identityPage[T any](s *Server, w http.ResponseWriter, r *http.Request,
	list func(context.Context, streams.Querier, string, members.Identity, int) ([]T, bool, error),
	id func(T) members.Identity) (page []T, next string, more, ok bool) {
	after, limit, ok := identityPaging(w, r)
	if !ok {
		return nil, "", false, false
	}
	page, more, err := list(r.Context(), s.cfg.Pool, caller(r).Org, after, limit)
	if err != nil {
		s.internal(w, "list identities", err)
		return nil, "", false, false
	}
	if n := len(page); n > 0 {
		next = id(page[n-1]).Kind + ":" + id(page[n-1]).Value
	}
	return page, next, more, true
}

// identityPaging reads ?limit= (as every list) and ?after=KIND:VALUE.
func identityPaging(w http.ResponseWriter, r *http.Request) (members.Identity, int, bool) {
	_, limit, ok := paging(w, r)
	if !ok {
		return members.Identity{}, 0, false
	}
	var after members.Identity
	if v := r.URL.Query().Get("after"); v != "" {
		kind, value, _ := strings.Cut(v, ":")
		id, err := members.ParseListed(kind, value) // the unmapped list's machine and none too
		if err != nil {
			writeError(w, http.StatusBadRequest, CodeBadRequest, "after must be a page's next (KIND:VALUE)")
			return members.Identity{}, 0, false
		}
		after = id
	}
	return after, limit, true
}
