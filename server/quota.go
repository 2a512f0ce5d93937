package server

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"
)

// quotas are each org's ingest allowance: token buckets of bytes and of
// envelopes, refilled at the configured rates and holding at most
// QuotaBurst seconds of them. A request is admitted while both of its
// org's buckets are not in debt, and is charged its Content-Length in the
// same step (a body without one, as it is read), so requests sent at once
// cannot all be admitted before any is charged: an org gets at most its
// burst plus one request ahead. Envelopes are charged as soon as the body
// is decoded. The buckets live in this process: with several spine nodes
// behind one address an org gets each node's quota.
type quotas struct {
	mu          sync.Mutex
	bytes, envs float64 // per second; 0: not limited
	orgs        map[string]*bucket
	now         func() time.Time
}

type bucket struct {
	bytes, envs float64
	at          time.Time
}

// maxIdleBuckets is when full (idle) buckets are forgotten: a full bucket
// is what a new one would be.
const maxIdleBuckets = 10000

func newQuotas(bytesPerSec, envsPerSec float64) *quotas {
	if bytesPerSec <= 0 && envsPerSec <= 0 {
		return nil
	}
	return &quotas{bytes: bytesPerSec, envs: envsPerSec, orgs: map[string]*bucket{}, now: time.Now}
}

// admit says how long org must wait before it may ingest again (0: now);
// an admitted request is charged bytes at once.
func (q *quotas) admit(org string, bytes int64) time.Duration {
	if q == nil {
		return 0
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	b := q.refill(org)
	if wait := max(debt(b.bytes, q.bytes), debt(b.envs, q.envs)); wait > 0 {
		return wait
	}
	q.take(b, bytes, 0)
	return 0
}

// charge takes what a request carried from org's buckets.
func (q *quotas) charge(org string, bytes, envs int64) {
	if q == nil {
		return
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	q.take(q.refill(org), bytes, envs)
}

func (q *quotas) take(b *bucket, bytes, envs int64) {
	if q.bytes > 0 {
		b.bytes -= float64(bytes)
	}
	if q.envs > 0 {
		b.envs -= float64(envs)
	}
}

// debt is the time a bucket needs to climb back to zero.
func debt(level, rate float64) time.Duration {
	if rate <= 0 || level >= 0 {
		return 0
	}
	return time.Duration(-level / rate * float64(time.Second))
}

func (q *quotas) refill(org string) *bucket {
	now := q.now()
	b := q.orgs[org]
	if b == nil {
		if len(q.orgs) >= maxIdleBuckets {
			q.forgetFull(now)
		}
		b = &bucket{bytes: q.bytes * QuotaBurst, envs: q.envs * QuotaBurst, at: now}
		q.orgs[org] = b
		return b
	}
	dt := now.Sub(b.at).Seconds()
	b.bytes = min(b.bytes+dt*q.bytes, q.bytes*QuotaBurst)
	b.envs = min(b.envs+dt*q.envs, q.envs*QuotaBurst)
	b.at = now
	return b
}

func (q *quotas) forgetFull(now time.Time) {
	for org, b := range q.orgs {
		dt := now.Sub(b.at).Seconds()
		if b.bytes+dt*q.bytes >= q.bytes*QuotaBurst && b.envs+dt*q.envs >= q.envs*QuotaBurst {
			delete(q.orgs, org)
		}
	}
}

type meterKey struct{}

// meter charges a request under a quota for what it carries beyond the
// bytes it was admitted with.
type meter struct {
	q       *quotas
	org     string
	charged int64 // bytes
}

// countEnvelopes charges the caller's quota for the envelopes a request
// carries, before they are published.
func countEnvelopes(ctx context.Context, n int) {
	if m, ok := ctx.Value(meterKey{}).(*meter); ok {
		m.q.charge(m.org, 0, int64(n))
	}
}

// read charges the bytes of a body read past what was charged already.
func (m *meter) read(n int64) {
	if n > m.charged {
		m.q.charge(m.org, n-m.charged, 0)
		m.charged = n
	}
}

// withQuota puts h under the caller's org quota: over it, 429
// quota_exceeded with Retry-After; else h runs, charged its bytes and
// envelopes as it goes.
func (s *Server) withQuota(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		org := caller(r).Org
		size := max(r.ContentLength, 0)
		if wait := s.quotas.admit(org, size); wait > 0 {
			s.m.refused.WithLabelValues(CodeQuotaExceeded).Inc()
			refuse429(w, r, CodeQuotaExceeded, fmt.Sprintf("org %s is over its ingest quota (%s); retry after the Retry-After seconds",
				org, s.quotaText()), wait)
			return
		}
		if s.quotas == nil {
			h(w, r)
			return
		}
		m := &meter{q: s.quotas, org: org, charged: size}
		if b, ok := r.Body.(*limitedBody); ok {
			b.onRead = m.read
		}
		h(w, r.WithContext(context.WithValue(r.Context(), meterKey{}, m)))
	}
}

func (s *Server) quotaText() string {
	var parts []string
	if s.quotas.bytes > 0 {
		parts = append(parts, fmt.Sprintf("%.0f bytes/s", s.quotas.bytes))
	}
	if s.quotas.envs > 0 {
		parts = append(parts, fmt.Sprintf("%.0f envelopes/s", s.quotas.envs))
	}
	return strings.Join(parts, " and ") + " per org"
}
