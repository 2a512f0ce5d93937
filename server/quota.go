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
// org's buckets are not in debt, then charged what it carried, so one
// batch of any size gets in and the org then waits for the debt to be
// repaid. The buckets live in this process: with several spine nodes
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

// admit says how long org must wait before it may ingest again (0: now).
func (q *quotas) admit(org string) time.Duration {
	if q == nil {
		return 0
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	b := q.refill(org)
	return max(debt(b.bytes, q.bytes), debt(b.envs, q.envs))
}

// charge takes what a request carried from org's buckets.
func (q *quotas) charge(org string, bytes, envs int64) {
	if q == nil {
		return
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	b := q.refill(org)
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

// meter is what a request under a quota reports it carried beyond its
// body's bytes.
type meter struct{ envelopes int64 }

// countEnvelopes tells the caller's quota how many envelopes a request
// carried.
func countEnvelopes(ctx context.Context, n int) {
	if m, ok := ctx.Value(meterKey{}).(*meter); ok {
		m.envelopes += int64(n)
	}
}

// withQuota puts h under the caller's org quota: over it, 429
// quota_exceeded with Retry-After; else h runs and its bytes and envelopes
// are charged.
func (s *Server) withQuota(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		org := caller(r).Org
		if wait := s.quotas.admit(org); wait > 0 {
			s.m.refused.WithLabelValues(CodeQuotaExceeded).Inc()
			refuse429(w, CodeQuotaExceeded, fmt.Sprintf("org %s is over its ingest quota (%s); retry after the Retry-After seconds",
				org, s.quotaText()), wait)
			return
		}
		m := &meter{}
		h(w, r.WithContext(context.WithValue(r.Context(), meterKey{}, m)))
		var n int64
		if b, ok := r.Body.(*limitedBody); ok {
			n = b.n
		}
		s.quotas.charge(org, n, m.envelopes)
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
