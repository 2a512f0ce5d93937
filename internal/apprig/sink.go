package apprig

import (
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
)

// Sink is an HTTP server that keeps every request the apps' telemetry
// posts to it (OTLP logs, metrics and traces; hooks) and answers each as
// an endpoint that took it: OTLP's empty success in the request's format,
// {} for JSON. It is the capture server of testdata/otlp and a stand-in
// for spine where a test looks at what the apps send.
type Sink struct {
	url string
	mu  sync.Mutex
	got []Posted
}

// Posted is one request a Sink took.
type Posted struct {
	Method          string `json:"method"`
	Path            string `json:"path"`
	ContentType     string `json:"contentType"`
	ContentEncoding string `json:"contentEncoding,omitempty"`
	// ContentLength is -1 for a chunked body (Transfer-Encoding).
	ContentLength    int64    `json:"contentLength"`
	TransferEncoding []string `json:"transferEncoding,omitempty"`
	UserAgent        string   `json:"userAgent"`
	Authorization    string   `json:"authorization"`
	// Body is the body as sent (compressed if it was).
	Body []byte `json:"-"`
}

// StartSink starts a Sink on 127.0.0.1, stopped when the test ends.
func StartSink(tb testing.TB) *Sink {
	tb.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	s := &Sink{url: "http://" + l.Addr().String()}
	srv := &http.Server{Handler: s}
	go srv.Serve(l) //nolint:errcheck // ends with Close
	tb.Cleanup(func() { srv.Close() })
	return s
}

// URL is the sink's base URL, http://127.0.0.1:PORT.
func (s *Sink) URL() string { return s.url }

func (s *Sink) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	h := r.Header
	s.mu.Lock()
	s.got = append(s.got, Posted{Method: r.Method, Path: r.URL.Path, ContentType: h.Get("Content-Type"),
		ContentEncoding: h.Get("Content-Encoding"), ContentLength: r.ContentLength, TransferEncoding: r.TransferEncoding,
		UserAgent: h.Get("User-Agent"), Authorization: h.Get("Authorization"), Body: body})
	s.mu.Unlock()
	if strings.Contains(h.Get("Content-Type"), "protobuf") {
		w.Header().Set("Content-Type", "application/x-protobuf")
		return
	}
	w.Header().Set("Content-Type", "application/json")
	io.WriteString(w, "{}") //nolint:errcheck // the app may be gone
}

// Requests is every request taken so far, in arrival order.
func (s *Sink) Requests() []Posted {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Posted(nil), s.got...)
}
