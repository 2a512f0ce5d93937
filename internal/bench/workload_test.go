package bench

import (
	"testing"
	"time"
)

func TestEventsAreSpreadExactly(t *testing.T) {
	for _, tc := range []struct {
		events float64
		chunks int
		want   int
	}{{0.1, 500, 50}, {0.1, 50, 5}, {0, 500, 0}, {1, 7, 7}, {0.3, 10, 3}} {
		w := newWorkload("t", 8, tc.events)
		b, err := newBurst(w.burst(3, tc.chunks, time.Now()))
		if err != nil {
			t.Fatal(err)
		}
		if got := b.counts.events; got != 3*tc.want {
			t.Errorf("events %g of %d chunks × 3 sessions: %d events, want %d", tc.events, tc.chunks, got, 3*tc.want)
		}
		for _, e := range b.envs {
			if err := e.Validate(); err != nil {
				t.Fatalf("envelope %s: %v", e.ID, err)
			}
		}
	}
}

func TestPercentileIsNearestRank(t *testing.T) {
	var d []time.Duration
	for i := 1; i <= 100; i++ {
		d = append(d, time.Duration(i))
	}
	for q, want := range map[float64]time.Duration{0.5: 50, 0.9: 90, 0.99: 99, 1: 100, 0: 1} {
		if got := percentile(d, q); got != want {
			t.Errorf("percentile(1..100, %g) = %d, want %d", q, got, want)
		}
	}
	if got := percentile(d[:1], 0.99); got != 1 {
		t.Errorf("percentile of one = %d, want 1", got)
	}
}
