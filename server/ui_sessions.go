package server

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/spinehq/spine/accounting"
	"github.com/spinehq/spine/server/pages"
	"github.com/spinehq/spine/streams"
	"github.com/spinehq/spine/views"
)

// sessionsPageRoutes: the sessions list, the page people open first
// (docs/ui.md). Its events (/ui/sessions/events) say when a session of the
// caller's scope started, ended or got new content; the script then fetches
// the newest page's rows and running count again (?fragment=1, and
// part=count for the count).
func (s *Server) sessionsPageRoutes() {
	s.mux.Handle("GET /ui/sessions", s.authedPage(s.sessionsPage))
	s.mux.Handle("GET /ui/sessions/events", s.authedPage(s.sessionsEvents))
}

// sessionStatuses are the status filter's choices: running, or an end.
var sessionStatuses = append([]string{views.StatusRunning}, streams.EndStatuses...)

func (s *Server) sessionsPage(w http.ResponseWriter, r *http.Request) {
	f, before, err := sessionsQuery(r)
	if err != nil {
		s.pageMessage(w, r, http.StatusBadRequest, "sessions", "Bad filter", err.Error())
		return
	}
	if fragment(r) && r.URL.Query().Get("part") == "count" {
		s.sessionsCount(w, r, f)
		return
	}
	page, err := views.Sessions(r.Context(), s.cfg.Pool, scope(r), f, before, views.SessionsPageSize)
	if err != nil {
		s.pageFailed(w, "sessions page", err)
		return
	}
	data := sessionsView(r, f, before == nil, page)
	if fragment(r) {
		s.page(w, http.StatusOK, "sessions-rows", pages.View{Data: data})
		return
	}
	v := view(r, "sessions", "Sessions", data)
	if data.Live {
		v.Events = "/ui/sessions/events"
		if page.Running > 0 {
			v.Refresh = 10
		}
	}
	s.page(w, http.StatusOK, "sessions", v)
}

// sessionsCount answers the running count alone, the page's other live part.
func (s *Server) sessionsCount(w http.ResponseWriter, r *http.Request, f views.SessionFilter) {
	n, err := views.RunningSessions(r.Context(), s.cfg.Pool, scope(r), f)
	if err != nil {
		s.pageFailed(w, "sessions count", err)
		return
	}
	s.page(w, http.StatusOK, "sessions-count", pages.View{Data: pages.SessionsView{Running: n, Filter: f}})
}

func sessionsView(r *http.Request, f views.SessionFilter, live bool, page *views.SessionsPage) pages.SessionsView {
	q := sessionsValues(f)
	v := pages.SessionsView{Rows: pages.Lines(page.Sessions, caller(r).Member), Running: page.Running, Filter: f,
		Admin: caller(r).IsAdmin(), Live: live, NewestURL: sessionsURL(q),
		Apps: streams.Apps, Statuses: sessionStatuses, Billings: accounting.BillingClasses}
	v.Day = q.Get("day")
	v.RowsURL = v.NewestURL
	q.Set("part", "count")
	v.CountURL = sessionsURL(q)
	q.Del("part")
	if page.Older != nil {
		q.Set("before", page.Older.String())
		v.OlderURL = sessionsURL(q)
	}
	return v
}

func sessionsURL(q url.Values) string {
	return (&url.URL{Path: "/ui/sessions", RawQuery: q.Encode()}).String()
}

// sessionsValues is the filter as the page's query string holds it.
func sessionsValues(f views.SessionFilter) url.Values {
	q := url.Values{}
	for k, v := range map[string]string{"app": f.App, "machine": f.Machine, "member": f.Member,
		"status": f.Status, "billing": f.Billing, "plan": f.Plan} {
		if v != "" {
			q.Set(k, v)
		}
	}
	if !f.Day.IsZero() {
		q.Set("day", f.Day.Format(time.DateOnly))
	}
	return q
}

// sessionsQuery reads the page's filters and cursor; an empty field filters
// nothing (the form sends every field). A member's member filter may name
// only themself: their list is their own.
func sessionsQuery(r *http.Request) (views.SessionFilter, *views.SessionCursor, error) {
	q := r.URL.Query()
	f := views.SessionFilter{App: q.Get("app"), Machine: q.Get("machine"), Member: q.Get("member"),
		Status: q.Get("status"), Billing: q.Get("billing"), Plan: q.Get("plan")}
	if err := checkSessionFilter(f); err != nil {
		return f, nil, err
	}
	if c := caller(r); f.Member != "" && !c.IsAdmin() && f.Member != c.Member {
		return f, nil, errors.New("member: only an org admin filters by member; your list holds your own sessions")
	}
	if d := q.Get("day"); d != "" {
		day, err := time.Parse(time.DateOnly, d)
		if err != nil {
			return f, nil, fmt.Errorf("day %q is not a date: write it YYYY-MM-DD", d)
		}
		f.Day = day
	}
	b := q.Get("before")
	if b == "" {
		return f, nil, nil
	}
	c, err := views.ParseSessionCursor(b)
	if err != nil {
		return f, nil, errors.New("before is not a page cursor: follow the page's Older sessions link")
	}
	return f, &c, nil
}

func checkSessionFilter(f views.SessionFilter) error {
	for _, c := range []struct {
		name, v string
		in      []string
	}{{"app", f.App, streams.Apps}, {"status", f.Status, sessionStatuses}, {"billing", f.Billing, accounting.BillingClasses}} {
		if c.v != "" && !slices.Contains(c.in, c.v) {
			return fmt.Errorf("%s %q is not one of %s", c.name, c.v, strings.Join(c.in, ", "))
		}
	}
	for _, c := range []struct{ name, v string }{{"machine", f.Machine}, {"plan", f.Plan}} {
		if c.v != "" && !streams.ValidID(c.v) {
			return fmt.Errorf("%s %q is not an id: letters, digits, '-' and '_', at most %d", c.name, c.v, streams.MaxIDLen)
		}
	}
	if f.Member != "" && !streams.ValidOwnerID(f.Member) {
		return fmt.Errorf("member %q is not a member id: letters, digits, '-', '_', '.' and '@', at most %d", f.Member, streams.MaxIDLen)
	}
	return nil
}
