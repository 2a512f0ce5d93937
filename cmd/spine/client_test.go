package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"
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

// droppingProxy forwards each request to a spine that counts what it
// handled, then drops the first answer (closes the connection unanswered):
// spine handled the request, the client never hears so.
func droppingProxy(t *testing.T) (*client, *atomic.Int32) {
	t.Helper()
	var handled atomic.Int32
	spine := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		handled.Add(1)
		_, _ = w.Write([]byte("{}"))
	}))
	t.Cleanup(spine.Close)
	var n atomic.Int32
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		req, _ := http.NewRequestWithContext(r.Context(), r.Method, spine.URL+r.URL.RequestURI(), r.Body)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Error(err)
			return
		}
		defer resp.Body.Close()
		if n.Add(1) == 1 {
			conn, _, _ := w.(http.Hijacker).Hijack()
			conn.Close()
			return
		}
		w.WriteHeader(resp.StatusCode)
		_, _ = io.Copy(w, resp.Body)
	}))
	t.Cleanup(proxy.Close)
	c, err := newClient(proxy.URL, "tok")
	if err != nil {
		t.Fatal(err)
	}
	return c, &handled
}

// A request spine handled whose answer was lost is asked again only when
// spine takes it twice as once: a token mint is not (a second live token),
// so its lost answer is the error, spine having handled it once; ingest
// and a runner's claim are, and are asked again. Before, client.do asked
// every request again: the mint was handled twice.
func TestClientRepeatsOnlyRepeatable(t *testing.T) {
	for _, tc := range []struct {
		path    string
		err     bool
		handled int32
	}{
		{"/v1/desktop-runner/tokens", true, 1},
		{"/v1/ingest", false, 2},
		{"/v1/desktop-runner/tasks/dt-1/claim", false, 2},
	} {
		t.Run(tc.path, func(t *testing.T) {
			c, handled := droppingProxy(t)
			var out json.RawMessage
			err := c.do(context.Background(), http.MethodPost, tc.path, []byte("{}"), &out)
			if (err != nil) != tc.err || handled.Load() != tc.handled {
				t.Fatalf("POST %s: %v, spine handled it %d times; want error %v, %d", tc.path, err, handled.Load(), tc.err, tc.handled)
			}
		})
	}
}

// A request that never reached spine (connection refused) is asked again
// whatever it is; one that may have is asked again only when repeatable.
func TestClientRetryRule(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	_, derr := http.Get("http://" + addr)
	if !notSent(derr) {
		t.Fatalf("connection refused: notSent false (%v)", derr)
	}
	if notSent(&noAnswerError{io.ErrUnexpectedEOF}) {
		t.Fatal("an answer cut: notSent true")
	}
	for path, want := range map[string]bool{
		"/v1/ingest": true, "/v1/sessions/s-1/cancel": true, "/v1/desktop-runner/tasks/t/heartbeat": true,
		"/v1/desktop-runner/tasks/t/events": true, "/v1/desktop-runner/tasks/t/complete": true,
		"/v1/desktop-runner/tokens": false, "/v1/remote-sessions": false, "/v1/plans/p/budget": false,
	} {
		if got := repeatable(http.MethodPost, path); got != want {
			t.Errorf("repeatable(POST %s) = %v, want %v", path, got, want)
		}
	}
	if !repeatable(http.MethodGet, "/v1/desktop-runner/tokens") {
		t.Error("a GET not repeatable")
	}
}

// maxTransientWait bounds the whole call from its first transient failure,
// the requests' own time included: a spine that takes 300 ms to answer
// each request 503 is asked a few times in a 1 s budget, not until the
// waits alone add up to it. Before, the waits (10 ms each here) were all
// that counted: about a hundred requests, 30 s.
func TestClientTransientBoundsTheCall(t *testing.T) {
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		time.Sleep(300 * time.Millisecond)
		http.Error(w, `{"error":{"code":"unavailable","message":"later"}}`, http.StatusServiceUnavailable)
	}))
	defer srv.Close()
	oldWait, oldFirst, oldMax := maxTransientWait, firstBackoff, maxBackoff
	maxTransientWait, firstBackoff, maxBackoff = time.Second, 10*time.Millisecond, 10*time.Millisecond
	defer func() { maxTransientWait, firstBackoff, maxBackoff = oldWait, oldFirst, oldMax }()
	c, _ := newClient(srv.URL, "tok")
	var out json.RawMessage
	err := c.do(context.Background(), http.MethodGet, "/v1/sessions/x", nil, &out)
	if !transientErr(err) || n.Load() > 6 {
		t.Fatalf("do: %v after %d requests; want a 503 after at most 6", err, n.Load())
	}
}

// A call with a deadline (a heartbeat, bound by its lease) does not begin
// a wait that would pass it: spine's 429 is the answer, at once, not a
// wait to the deadline and its error. Before, the Retry-After wait ran
// into the deadline: context deadline exceeded.
func TestClientDeadlineBoundsTheBusyWait(t *testing.T) {
	c, n := retrying(t, 429, 429, 429)
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	var out json.RawMessage
	err := c.do(ctx, http.MethodPost, "/v1/desktop-runner/tasks/t/heartbeat", []byte("{}"), &out)
	var ae *apiError
	if !errors.As(err, &ae) || ae.Status != http.StatusTooManyRequests || n.Load() != 1 {
		t.Fatalf("do: %v after %d requests; want the 429 after 1", err, n.Load())
	}
}
