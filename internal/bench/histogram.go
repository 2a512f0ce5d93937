package bench

import (
	"math"
	"time"
)

// Latency histogram: logarithmic buckets 1% wide from 1 µs, so a soak of
// any length keeps a few kilobytes instead of one duration per chunk.
const (
	histGrowth  = 1.01
	histBuckets = 2048 // 1.01^2047 µs ≈ 12 minutes; longer goes in the last bucket
)

var histLogGrowth = math.Log(histGrowth)

// histogram counts durations in buckets; quantiles come back as the upper
// edge of their bucket, so they overstate by less than 1%. The maximum is
// exact.
type histogram struct {
	counts [histBuckets]uint64
	n      uint64
	max    time.Duration
}

func bucketOf(d time.Duration) int {
	us := float64(d) / float64(time.Microsecond)
	if us < 1 {
		return 0
	}
	return min(1+int(math.Log(us)/histLogGrowth), histBuckets-1)
}

// upperEdge is the largest duration bucket b holds.
func upperEdge(b int) time.Duration {
	return time.Duration(math.Pow(histGrowth, float64(b)) * float64(time.Microsecond))
}

func (h *histogram) add(d time.Duration) {
	h.counts[bucketOf(d)]++
	h.n++
	h.max = max(h.max, d)
}

// quantile is the nearest-rank q-quantile (0 with no samples), never more
// than the maximum.
func (h *histogram) quantile(q float64) time.Duration {
	if h.n == 0 {
		return 0
	}
	rank := uint64(max(math.Ceil(q*float64(h.n)), 1))
	var seen uint64
	for b, c := range h.counts {
		seen += c
		if seen >= rank && b < histBuckets-1 {
			return min(upperEdge(b), h.max)
		}
	}
	return h.max
}

func (h *histogram) reset() { *h = histogram{} }
