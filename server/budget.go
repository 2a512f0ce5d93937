package server

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// budget is the process-wide allowance of request bytes in flight, weighted
// by what handling them costs (bodyCost). A request that would go past it
// is answered 429 busy rather than queued: its body is not read, so a
// refused request costs nothing but its headers. No org (the org of the
// request's token; requests without a valid token share one) may hold more
// than half of it, so one org's uploads cannot leave every other org busy.
// A nil budget is no limit.
type budget struct {
	mu               sync.Mutex
	max, share, used int64
	orgs             map[string]int64
	gauge            prometheus.Gauge
}

func newBudget(max int64, gauge prometheus.Gauge) *budget {
	if max <= 0 {
		return nil
	}
	return &budget{max: max, share: max / 2, orgs: map[string]int64{}, gauge: gauge}
}

// clamp bounds one request's weight by an org's share, so a request
// heavier than the share still gets in when its org has nothing in flight.
func (b *budget) clamp(n int64) int64 {
	if b == nil {
		return n
	}
	return min(n, b.share)
}

func (b *budget) take(org string, n int64) bool {
	if b == nil || n <= 0 {
		return true
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.used+n > b.max || b.orgs[org]+n > b.share {
		return false
	}
	b.used += n
	b.orgs[org] += n
	b.gauge.Set(float64(b.used))
	return true
}

func (b *budget) give(org string, n int64) {
	if b == nil || n <= 0 {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.used -= n
	if b.orgs[org] -= n; b.orgs[org] <= 0 {
		delete(b.orgs, org)
	}
	b.gauge.Set(float64(b.used))
}
