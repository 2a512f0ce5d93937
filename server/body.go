package server

import (
	"errors"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/spinehq/spine/auth"
	"github.com/spinehq/spine/desktop"
)

// limitBody serves a request whose body is read under the body limits: it
// must keep Limits.BodyMinRate once Limits.BodyGrace is spent, and it holds
// its weight of the in-flight budget while it is read and handled. A
// request without a body (every GET, the event streams among them) is
// served as it is: nothing here puts a deadline on a long-lived stream.
func (s *Server) limitBody(w http.ResponseWriter, r *http.Request, next http.Handler) {
	if r.Body == nil || r.Body == http.NoBody {
		next.ServeHTTP(w, r)
		return
	}
	g := &guardWriter{ResponseWriter: w}
	per, limit, fixed := bodyCost(r.URL.Path)
	b := &limitedBody{ReadCloser: r.Body, s: s, w: g, req: r, rc: http.NewResponseController(g), per: per, limit: limit,
		rate: s.limits.BodyMinRate, grace: s.limits.BodyGrace, org: s.bodyOrg(r)}
	defer b.done()
	if !b.reserve(max(r.ContentLength, 0), fixed) {
		s.m.refused.WithLabelValues(CodeBusy).Inc()
		// The body is not read: what is left of it must not be taken
		// for the next request on the connection.
		w.Header().Set("Connection", "close")
		refuse429(w, r, CodeBusy, "spine is handling as many request bytes as it may hold; retry after the Retry-After seconds", time.Second)
		// Nor may the server wait on it before closing: a trickle would
		// keep the connection for the whole grace period.
		b.err = ErrBusy
		_ = b.rc.SetReadDeadline(time.Now())
		return
	}
	// A shallow copy: the server's own request keeps its body, which it
	// inspects after the handler (an unanswered Expect: 100-continue).
	r = r.WithContext(r.Context())
	r.Body = b
	next.ServeHTTP(g, r)
}

// bodyOrg is the org whose share of the in-flight budget a request takes:
// its token's, member or runner (the route checks revocation; a revoked
// runner token still names its org). Without a valid token it is "", one
// share for every anonymous request.
func (s *Server) bodyOrg(r *http.Request) string {
	tok, ok := auth.BearerToken(r)
	if !ok || s.cfg.Signer == nil {
		return ""
	}
	now := time.Now()
	for _, aud := range []string{auth.AudienceMember, desktop.AudienceRunner, auth.AudienceIngest} {
		if c, err := s.cfg.Signer.Verify(tok, aud, now); err == nil {
			return c.Org
		}
	}
	return ""
}

// holdDecoded grows what r's body holds of the in-flight budget to cover
// n bytes: an OTLP body gunzipped is heavier than the bytes that came over
// the wire, which are all the limiter counted. false means the budget is
// spent (answer 429 busy).
func holdDecoded(r *http.Request, n int64) bool {
	b, ok := r.Body.(*limitedBody)
	return !ok || b.reserve(n, 0)
}

// guardWriter lets the body limiter answer a request itself when it cuts
// the body: what the handler writes after that is dropped.
type guardWriter struct {
	http.ResponseWriter
	wrote, cut bool
}

func (g *guardWriter) WriteHeader(code int) {
	if !g.cut {
		g.wrote = true
		g.ResponseWriter.WriteHeader(code)
	}
}

func (g *guardWriter) Write(p []byte) (int, error) {
	if g.cut {
		return len(p), nil
	}
	g.wrote = true
	return g.ResponseWriter.Write(p)
}

func (g *guardWriter) Flush() {
	if f, ok := g.ResponseWriter.(http.Flusher); ok && !g.cut {
		f.Flush()
	}
}

func (g *guardWriter) Unwrap() http.ResponseWriter { return g.ResponseWriter }

// limitedBody is a request body under the limits. It counts only the time
// spent waiting in Read against the client, so a handler that works between
// reads (an upload staging each piece) does not make its client look slow.
type limitedBody struct {
	io.ReadCloser
	s           *Server
	w           *guardWriter
	req         *http.Request // what it answers in the words of, when cut
	rc          *http.ResponseController
	per, limit  int64 // budget weight per byte, up to limit bytes
	rate        int64 // minimum bytes/s; 0: none
	grace       time.Duration
	org         string // whose share of the budget it holds
	held, n     int64  // budget held, bytes read
	onRead      func(n int64)
	waited      time.Duration
	eof, noDead bool
	err         error
}

func (b *limitedBody) Read(p []byte) (int, error) {
	if b.err != nil {
		return 0, b.err
	}
	if !b.setDeadline() {
		return 0, b.cut(http.StatusRequestTimeout, CodeBodyTooSlow, ErrBodyTooSlow, b.slowMessage())
	}
	t := time.Now()
	k, err := b.ReadCloser.Read(p)
	b.waited += time.Since(t)
	b.n += int64(k)
	if b.onRead != nil {
		b.onRead(b.n)
	}
	if !b.reserve(b.n, 0) {
		return k, b.cut(http.StatusTooManyRequests, CodeBusy, ErrBusy,
			"spine is handling as many request bytes as it may hold; retry after the Retry-After seconds")
	}
	var ne net.Error
	switch {
	case errors.Is(err, io.EOF):
		b.eof = true
		b.clearDeadline()
	case errors.As(err, &ne) && ne.Timeout():
		return k, b.cut(http.StatusRequestTimeout, CodeBodyTooSlow, ErrBodyTooSlow, b.slowMessage())
	}
	return k, err
}

// allowance is how much longer the client may keep the body waiting.
func (b *limitedBody) allowance() time.Duration {
	return b.grace + time.Duration(float64(b.n)/float64(b.rate)*float64(time.Second)) - b.waited
}

// setDeadline puts the connection's read deadline where the client falls
// below the minimum rate; false means it already has.
func (b *limitedBody) setDeadline() bool {
	if b.rate <= 0 || b.noDead {
		return true
	}
	left := b.allowance()
	if left <= 0 {
		return false
	}
	if b.rc.SetReadDeadline(time.Now().Add(left)) != nil {
		b.noDead = true // a writer without deadlines (a test recorder): no rate
	}
	return true
}

// clearDeadline lifts the deadline once the body is read: the server then
// reads in the background to notice a client leaving, and a deadline there
// would cancel a long-running handler.
func (b *limitedBody) clearDeadline() {
	if b.rate > 0 && !b.noDead {
		_ = b.rc.SetReadDeadline(time.Time{})
	}
}

func (b *limitedBody) slowMessage() string {
	return "request body arrived slower than the minimum rate; the connection is closed"
}

// cut ends the body: the client gets status and code now (unless the
// handler has answered already) and the connection is closed.
func (b *limitedBody) cut(status int, code string, err error, msg string) error {
	b.err = err
	b.s.m.refused.WithLabelValues(code).Inc()
	if !b.w.wrote {
		b.w.Header().Set("Connection", "close")
		if status == http.StatusTooManyRequests {
			refuse429(b.w, b.req, code, msg, time.Second)
		} else {
			refuseIn(b.w, b.req, status, code, msg)
		}
		b.w.cut = true
	}
	b.release()
	return err
}

// reserve grows what the body holds of the budget to cover n bytes read
// (or to fixed, for a body of fixed weight); false means the budget is spent.
func (b *limitedBody) reserve(n, fixed int64) bool {
	need := b.s.budget.clamp(max(fixed, min(n, b.limit)*b.per))
	if need <= b.held {
		return true
	}
	// Reserve ahead in steps, so a body read in small pieces takes the lock
	// once per 64 KiB rather than once per read.
	want := b.s.budget.clamp(min(max(need, b.held+(64<<10)*b.per), max(fixed, b.limit*b.per)))
	if !b.s.budget.take(b.org, want-b.held) {
		return false
	}
	b.held = want
	return true
}

func (b *limitedBody) release() {
	b.s.budget.give(b.org, b.held)
	b.held = 0
}

// done runs when the handler returns: the budget is given back, and a body
// left unread keeps what is left of its allowance, so the server's reading
// of the rest cannot be held by a trickle either.
func (b *limitedBody) done() {
	b.release()
	if b.eof || b.err != nil || b.rate <= 0 || b.noDead {
		return
	}
	if !b.setDeadline() {
		_ = b.rc.SetReadDeadline(time.Now())
	}
}
