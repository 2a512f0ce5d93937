package server

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/spinehq/spine/auth"
	"github.com/spinehq/spine/desktop"
	"github.com/spinehq/spine/library"
	"github.com/spinehq/spine/streams"
)

// Config is what the HTTP API needs.
type Config struct {
	Pool      *pgxpool.Pool      // required
	Publisher *streams.Publisher // required for /v1/ingest
	Signer    *auth.Signer       // required
	Gatherer  prometheus.Gatherer
	Registry  prometheus.Registerer
	Logger    *slog.Logger // nil: discard
	// Ready reports whether spine can serve (/readyz); nil means always.
	Ready func(ctx context.Context) error
	// Library stores uploads and serves files; JS records uploads on the log.
	Library library.BlobStore
	JS      jetstream.JetStream
	// MaxUploadBytes bounds one upload; 0 means DefaultMaxUploadBytes.
	MaxUploadBytes int64
	// Desktop serves desktop tasks, runners and remote sessions; nil: no such routes.
	Desktop *desktop.Service
	// MCP is mounted at /mcp when set.
	MCP http.Handler
	// Limits bound request bodies, bytes in flight and each org's ingest.
	Limits Limits
	// CancelGrace is how long a cancelled session may run before the
	// sweeper ends it, as POST /v1/sessions/{id}/cancel reports it; 0 means
	// recorder.DefaultCancelGrace.
	CancelGrace time.Duration
}

// Server is spine's HTTP API.
type Server struct {
	cfg    Config
	log    *slog.Logger
	m      *metrics
	mux    *http.ServeMux
	limits Limits
	budget *budget
	quotas *quotas
	// slots bound the open page streams; closing ends them (CloseStreams).
	slots     *streamSlots
	closing   chan struct{}
	closeOnce sync.Once
}

// New builds the API's routes.
func New(cfg Config) *Server {
	s := &Server{cfg: cfg, log: cfg.Logger, m: newMetrics(cfg.Registry), mux: http.NewServeMux(), limits: cfg.Limits.WithDefaults()}
	s.budget = newBudget(s.limits.InflightBytes, s.m.inflight)
	s.quotas = newQuotas(s.limits.OrgBytesPerSec, s.limits.OrgEnvelopesPerSec)
	s.slots, s.closing = newStreamSlots(MaxPageStreamsPerMember, MaxPageStreams), make(chan struct{})
	if s.log == nil {
		s.log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	s.routes()
	return s
}

func (s *Server) routes() {
	s.mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	})
	s.mux.HandleFunc("GET /readyz", s.readyz)
	if s.cfg.Gatherer != nil {
		s.mux.Handle("GET /metrics", promhttp.HandlerFor(s.cfg.Gatherer, promhttp.HandlerOpts{}))
	}
	// A runner token records its task's app session here, as its member
	// (docs/desktop.md); every other member route refuses it.
	s.mux.Handle("POST /v1/ingest", s.authedOrRunner(s.withQuota(s.ingest)))
	s.mux.Handle("GET /v1/sessions", s.authed(s.listSessions))
	s.mux.Handle("GET /v1/sessions/{id}", s.authedOrRunner(s.getSession))
	s.mux.Handle("GET /v1/sessions/{id}/transcript", s.authedOrRunner(s.getTranscript))
	s.mux.Handle("POST /v1/sessions/{id}/cancel", s.authed(s.cancelSession))
	s.mux.Handle("GET /v1/runs/{id}/steps", s.authed(s.getSteps))
	s.libraryRoutes()
	s.accountingRoutes()
	s.desktopRoutes()
	s.deadLetterRoutes()
	s.memberRoutes()
	s.telemetryRoutes()
	s.uiRoutes()
	s.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, CodeNotFound, "no route for "+r.Method+" "+r.URL.Path)
	})
}

// ServeHTTP serves the API.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	rw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
	s.limitBody(rw, r, s.mux)
	_, pattern := s.mux.Handler(r)
	s.m.requests.WithLabelValues(pattern, http.StatusText(rw.status)).Inc()
	s.m.duration.WithLabelValues(pattern).Observe(time.Since(start).Seconds())
}

type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	w.status = code
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (w *statusWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	if err := s.cfg.Pool.Ping(ctx); err != nil {
		writeError(w, http.StatusServiceUnavailable, CodeUnavailable, "database: "+err.Error())
		return
	}
	if s.cfg.Ready != nil {
		if err := s.cfg.Ready(ctx); err != nil {
			writeError(w, http.StatusServiceUnavailable, CodeUnavailable, err.Error())
			return
		}
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ready"})
}

type ctxKey struct{}

// caller is the verified identity behind a request.
func caller(r *http.Request) auth.Claims { return r.Context().Value(ctxKey{}).(auth.Claims) }

// owner is the verified caller as the owner every read and write of the
// request is scoped to.
func owner(r *http.Request) streams.Owner {
	c := caller(r)
	return streams.Owner{Org: c.Org, Member: c.Member}
}

// authed requires a valid member bearer token.
func (s *Server) authed(h http.HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tok, ok := auth.BearerToken(r)
		if !ok {
			w.Header().Set("WWW-Authenticate", `Bearer realm="spine"`)
			writeError(w, http.StatusUnauthorized, CodeUnauthorized, "a bearer token is required (spine token mint)")
			return
		}
		claims, err := s.cfg.Signer.Verify(tok, auth.AudienceMember, time.Now())
		serveMember(w, r, h, claims, err)
	})
}

// serveMember serves h as the member of claims, or answers err (the
// member token's verification failed) with a 401 invalid_token.
func serveMember(w http.ResponseWriter, r *http.Request, h http.HandlerFunc, claims auth.Claims, err error) {
	if err != nil {
		w.Header().Set("WWW-Authenticate", `Bearer realm="spine", error="invalid_token"`)
		writeError(w, http.StatusUnauthorized, CodeUnauthorized, "invalid token: "+err.Error())
		return
	}
	h(w, r.WithContext(context.WithValue(r.Context(), ctxKey{}, claims)))
}
