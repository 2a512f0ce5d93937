package server

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// budget is the process-wide allowance of request bytes in flight, weighted
// by what handling them costs (bodyCost). A request that would go past it
// is answered 429 busy rather than queued: its body is not read, so a
// refused request costs nothing but its headers. A nil budget is no limit.
type budget struct {
	mu        sync.Mutex
	max, used int64
	gauge     prometheus.Gauge
}

func newBudget(max int64, gauge prometheus.Gauge) *budget {
	if max <= 0 {
		return nil
	}
	return &budget{max: max, gauge: gauge}
}

// clamp bounds one request's weight by the whole budget, so a request
// heavier than the budget still gets in when nothing else is in flight.
func (b *budget) clamp(n int64) int64 {
	if b == nil {
		return n
	}
	return min(n, b.max)
}

func (b *budget) take(n int64) bool {
	if b == nil || n <= 0 {
		return true
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.used+n > b.max {
		return false
	}
	b.used += n
	b.gauge.Set(float64(b.used))
	return true
}

func (b *budget) give(n int64) {
	if b == nil || n <= 0 {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.used -= n
	b.gauge.Set(float64(b.used))
}
