package fakemodel

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// lastEventWriter records a response and, when the last event is written,
// how many responses the server's log held at that moment.
type lastEventWriter struct {
	*httptest.ResponseRecorder
	last   []byte
	srv    *Server
	logged int // -1 until the last event is written
}

func (w *lastEventWriter) Write(p []byte) (int, error) {
	if bytes.Contains(p, w.last) {
		w.logged = len(w.srv.Log())
	}
	return w.ResponseRecorder.Write(p)
}

// A response is in the log before its last event is sent: a client that
// has read the whole response (Claude Code on message_stop, Codex on
// response.completed) and ended finds it there.
func TestLoggedBeforeLastEvent(t *testing.T) {
	for _, tc := range []struct {
		path, body, last string
		serve            func(*Server, http.ResponseWriter, *http.Request)
	}{
		{"/v1/messages", `{"model":"m","stream":true}`, "event: message_stop", (*Server).messages},
		{"/v1/responses", `{"model":"m"}`, "event: response.completed", (*Server).responses},
	} {
		srv := Start(t)
		w := &lastEventWriter{ResponseRecorder: httptest.NewRecorder(), last: []byte(tc.last), srv: srv, logged: -1}
		tc.serve(srv, w, httptest.NewRequest(http.MethodPost, tc.path, strings.NewReader(tc.body)))
		if w.logged != 1 {
			t.Errorf("%s: the log held %d responses when %q was sent, want 1", tc.path, w.logged, tc.last)
		}
	}
}
