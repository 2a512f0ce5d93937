package main

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
)

// retrying serves the answers in order, one a request, then 200 {}; it
// counts the requests. An answer 0 closes the connection unanswered.
func retrying(t *testing.T, answers ...int) (*client, *atomic.Int32) {
	t.Helper()
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		i := int(n.Add(1)) - 1
		if i >= len(answers) {
			_, _ = w.Write([]byte("{}"))
			return
		}
		if answers[i] == 0 {
			conn, _, _ := w.(http.Hijacker).Hijack()
			conn.Close()
			return
		}
		w.Header().Set("Retry-After", "1")
		http.Error(w, `{"error":{"code":"busy","message":"later"}}`, answers[i])
	}))
	t.Cleanup(srv.Close)
	c, err := newClient(srv.URL, "tok")
	if err != nil {
		t.Fatal(err)
	}
	return c, &n
}

// One retry rule for every command, in client.do: no answer, 502, 503,
// 504 and a 429 are asked again until spine answers; any other error is
// the answer at once. Before, client.do retried only a 429.
func TestClientRetriesTransient(t *testing.T) {
	for _, tc := range []struct {
		name    string
		answers []int
		err     bool
		tries   int32
	}{
		{"no answer, 502, 503, 504", []int{0, 502, 503, 504}, false, 5},
		{"429", []int{429}, false, 2},
		{"404 at once", []int{404}, true, 1},
		{"500 at once", []int{500}, true, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, n := retrying(t, tc.answers...)
			var out json.RawMessage
			err := c.do(context.Background(), http.MethodGet, "/v1/sessions/x", nil, &out)
			if (err != nil) != tc.err || n.Load() != tc.tries {
				t.Fatalf("do: %v after %d requests; want error %v after %d", err, n.Load(), tc.err, tc.tries)
			}
		})
	}
}

// A spine that never answers is given up on after maxTransientWait.
func TestClientGivesUp(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // nothing listens: connection refused
	old := maxTransientWait
	maxTransientWait = firstBackoff * 3
	defer func() { maxTransientWait = old }()
	c, _ := newClient("http://"+addr, "tok")
	var out json.RawMessage
	if err := c.do(context.Background(), http.MethodGet, "/v1/sessions/x", nil, &out); !transientErr(err) {
		t.Fatalf("do: %v, want no answer", err)
	}
}
