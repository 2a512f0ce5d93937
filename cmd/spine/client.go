package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/spinehq/spine/internal/config"
)

// client talks to a running spine's HTTP API.
type client struct {
	base  string
	token string
	http  *http.Client
	// told is set once the user has been told spine is slowing requests
	// or not answering; goroutines of one run share the client.
	told atomic.Bool
}

func newClient(url, token string) (*client, error) {
	remote := config.RemoteFromEnv(url, token)
	if remote.Token == "" {
		return nil, usageError{"no token: pass --token or set SPINE_TOKEN (spine serve prints a development token on a terminal; spine token mint makes one)"}
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.ExpectContinueTimeout = 10 * time.Second
	return &client{base: strings.TrimRight(remote.URL, "/"),
		token: remote.Token, http: &http.Client{Timeout: 60 * time.Second, Transport: tr}}, nil
}

// apiError is an error response from spine.
type apiError struct {
	Status     int
	Code       string
	Message    string
	RetryAfter time.Duration // from a 429's Retry-After; 0 when absent
}

func (e *apiError) Error() string { return fmt.Sprintf("%d %s: %s", e.Status, e.Code, e.Message) }

// HTTPStatus is the answer's status, as importer.API asks of its errors.
func (e *apiError) HTTPStatus() int { return e.Status }

// expectContinueBytes is the body size from which a request asks before
// sending its body.
const expectContinueBytes = 64 << 10

// The retry rule, one for every command (do): what spine may answer if
// asked again is asked again. A 429 is retried after its Retry-After
// (spine refused the request before handling it: over the in-flight
// budget or the org's quota), for up to maxBusyWait in all, so an import
// over its quota is slowed rather than failed. No answer (connection
// refused or reset, a timeout) and 502, 503 or 504 are retried with
// backoff from firstBackoff, doubling to maxBackoff, for up to
// maxTransientWait in all: a spine restarting or behind a proxy that lost
// it for a moment. That is for a request spine takes twice as once
// (repeatable): ingest by envelope id, a cancel by its derived id, a
// runner's register, claim (the holder's claim again is its claim),
// heartbeat, events (by seq) and complete (its receipt), and every GET.
// Any other request (a token mint: a second one is a second live token)
// may have been handled when its answer was lost: it is retried only when
// it never reached spine (the connection was never made) or on a 429.
var (
	maxRetryAfter    = time.Minute      // longest one wait, whatever the server says
	maxBusyWait      = 15 * time.Minute // longest a request keeps retrying a 429
	firstBackoff     = 200 * time.Millisecond
	maxBackoff       = 5 * time.Second
	maxTransientWait = 10 * time.Second // longest a request keeps retrying no answer or a 502/503/504
)

// Do is do, for importer.API.
func (c *client) Do(ctx context.Context, method, path string, body []byte, out any) error {
	return c.do(ctx, method, path, body, out)
}

// do sends one request, retried by the retry rule above; the error is the
// last answer's (or the lack of one). maxTransientWait bounds the time
// from the first transient failure, the requests included (one can take
// the client's 60 s timeout), not only the waits between them. A ctx
// deadline is the call's own bound (a heartbeat's lease): a wait that
// would pass it is not begun, and the error is spine's last answer, not
// the deadline.
func (c *client) do(ctx context.Context, method, path string, body []byte, out any) error {
	var busy time.Duration
	var firstTransient time.Time
	backoff := firstBackoff
	for {
		err := c.once(ctx, method, path, body, out)
		if err == nil || ctx.Err() != nil {
			return err
		}
		var d time.Duration
		var ae *apiError
		switch {
		case errors.As(err, &ae) && ae.Status == http.StatusTooManyRequests:
			if busy >= maxBusyWait {
				return err
			}
			d = min(max(ae.RetryAfter, time.Second), maxRetryAfter)
			busy += d
			c.tell(fmt.Sprintf("spine is slowing requests (%s); retrying after %s, as it asks", ae.Code, d))
		case transientErr(err) && (repeatable(method, path) || notSent(err)):
			if firstTransient.IsZero() {
				firstTransient = time.Now()
			}
			if time.Since(firstTransient)+backoff > maxTransientWait {
				return err
			}
			d, backoff = backoff, min(backoff*2, maxBackoff)
			c.tell(fmt.Sprintf("spine did not answer (%v); retrying", err))
		default:
			return err
		}
		if dl, ok := ctx.Deadline(); ok && time.Until(dl) < d {
			return err // the call's deadline comes first
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(d):
		}
	}
}

// tell says msg on stderr, once per client.
func (c *client) tell(msg string) {
	if c.told.CompareAndSwap(false, true) {
		fmt.Fprintln(os.Stderr, msg)
	}
}

// noAnswerError is a request spine gave no answer to.
type noAnswerError struct{ err error }

func (e *noAnswerError) Error() string { return e.err.Error() }
func (e *noAnswerError) Unwrap() error { return e.err }

// repeatable: spine takes method path twice as once (the retry rule).
func repeatable(method, path string) bool {
	switch method {
	case http.MethodGet, http.MethodHead:
		return true
	case http.MethodPost:
	default:
		return false
	}
	path, _, _ = strings.Cut(path, "?")
	switch path {
	case "/v1/ingest", "/v1/desktop-runner/register":
		return true
	}
	if rest, ok := strings.CutPrefix(path, "/v1/desktop-runner/tasks/"); ok {
		_, op, _ := strings.Cut(rest, "/")
		return op == "claim" || op == "heartbeat" || op == "events" || op == "complete"
	}
	if rest, ok := strings.CutPrefix(path, "/v1/sessions/"); ok {
		_, op, _ := strings.Cut(rest, "/")
		return op == "cancel"
	}
	return false
}

// notSent: the request never reached spine (no connection was made), so
// nothing of it was handled.
func notSent(err error) bool {
	var oe *net.OpError
	return errors.As(err, &oe) && oe.Op == "dial"
}

// transientErr: no answer, or an answer that says to ask again later
// (502, 503, 504).
func transientErr(err error) bool {
	var na *noAnswerError
	var ae *apiError
	return errors.As(err, &na) ||
		errors.As(err, &ae) && (ae.Status == http.StatusBadGateway || ae.Status == http.StatusServiceUnavailable ||
			ae.Status == http.StatusGatewayTimeout)
}

func (c *client) once(ctx context.Context, method, path string, body []byte, out any) error {
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if len(body) > expectContinueBytes {
		// spine may refuse (429) before reading: then the body is not sent.
		req.Header.Set("Expect", "100-continue")
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return &noAnswerError{fmt.Errorf("is spine serving at %s? %w", c.base, err)}
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return &noAnswerError{err} // the answer was cut
	}
	if resp.StatusCode >= 400 {
		var eb struct {
			Error struct{ Code, Message string } `json:"error"`
		}
		_ = json.Unmarshal(data, &eb)
		secs, _ := strconv.Atoi(resp.Header.Get("Retry-After"))
		return &apiError{Status: resp.StatusCode, Code: eb.Error.Code, Message: eb.Error.Message,
			RetryAfter: time.Duration(secs) * time.Second}
	}
	if raw, ok := out.(*json.RawMessage); ok {
		*raw = data
		return nil
	}
	return json.Unmarshal(data, out)
}

// answer calls method path with body and, with asJSON, prints the answer
// as spine sent it (printed is true); otherwise it decodes it into out.
func (c *client) answer(ctx context.Context, method, path string, body []byte, asJSON bool, out any) (printed bool, err error) {
	var raw json.RawMessage
	if err := c.do(ctx, method, path, body, &raw); err != nil {
		return false, err
	}
	if asJSON {
		_, err := stdout.Write(raw)
		return true, err
	}
	return false, json.Unmarshal(raw, out)
}
