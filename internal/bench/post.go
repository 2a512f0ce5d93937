package bench

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// poster sends request bodies to a spine's HTTP API the way a well-behaved
// client does: a 429 is sent again after its Retry-After.
type poster struct {
	base, token string
	http        *http.Client
	refused     atomic.Int64 // 429s received
	statuses    statusCounts
}

func newPoster(base, token string) *poster {
	// Expect: 100-continue lets spine refuse (429) before the body is
	// sent: a refusal after part of it was written would close the
	// connection under the client's feet.
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.ExpectContinueTimeout = 10 * time.Second
	return &poster{base: base, token: token, http: &http.Client{Timeout: 5 * time.Minute, Transport: tr},
		statuses: statusCounts{m: map[int]int{}}}
}

// post sends a JSON body to path until it is not answered 429, and
// returns the final status.
func (p *poster) post(ctx context.Context, path string, body []byte) (int, error) {
	return p.postAs(ctx, path, "application/json", body)
}

// postAs is post with another Content-Type.
func (p *poster) postAs(ctx context.Context, path, contentType string, body []byte) (int, error) {
	for {
		status, wait, err := p.once(ctx, path, contentType, body)
		if err != nil || status != http.StatusTooManyRequests {
			return status, err
		}
		p.refused.Add(1)
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(wait):
		}
	}
}

func (p *poster) once(ctx context.Context, path, contentType string, body []byte) (int, time.Duration, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.base+path, bytes.NewReader(body))
	if err != nil {
		return 0, 0, err
	}
	req.Header.Set("Authorization", "Bearer "+p.token)
	req.Header.Set("Content-Type", contentType)
	req.Header.Set("Expect", "100-continue")
	resp, err := p.http.Do(req)
	if err != nil {
		return 0, 0, fmt.Errorf("post %s: %w", path, err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
	p.statuses.add(resp.StatusCode)
	if resp.StatusCode >= 400 && resp.StatusCode != http.StatusTooManyRequests {
		return resp.StatusCode, 0, fmt.Errorf("post %s: %d %s", path, resp.StatusCode, bytes.TrimSpace(data))
	}
	secs, _ := strconv.Atoi(resp.Header.Get("Retry-After"))
	return resp.StatusCode, time.Duration(max(secs, 1)) * time.Second, nil
}

// get reads path and returns its status and body.
func (p *poster) get(ctx context.Context, path string) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.base+path, nil)
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+p.token)
	resp, err := p.http.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	return resp.StatusCode, data, err
}

// statusCounts counts answers by HTTP status.
type statusCounts struct {
	mu sync.Mutex
	m  map[int]int
}

func (s *statusCounts) add(status int) {
	s.mu.Lock()
	s.m[status]++
	s.mu.Unlock()
}

// snapshot is the counts keyed by status as text, for JSON.
func (s *statusCounts) snapshot() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]int, len(s.m))
	for k, v := range s.m {
		out[strconv.Itoa(k)] = v
	}
	return out
}
