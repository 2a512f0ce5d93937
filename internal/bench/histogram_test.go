package bench

import (
	"testing"
	"time"
)

func TestHistogramQuantiles(t *testing.T) {
	var h histogram
	if h.quantile(0.99) != 0 {
		t.Fatal("empty histogram has a quantile")
	}
	for i := 1; i <= 1000; i++ {
		h.add(time.Duration(i) * time.Millisecond)
	}
	for _, c := range []struct {
		q    float64
		want time.Duration
	}{{0.5, 500 * time.Millisecond}, {0.9, 900 * time.Millisecond}, {0.99, 990 * time.Millisecond}, {1, time.Second}} {
		got := h.quantile(c.q)
		if got < c.want || float64(got) > float64(c.want)*1.0101 {
			t.Errorf("quantile(%g) = %s, want %s to +1%%", c.q, got, c.want)
		}
	}
	h.add(time.Hour) // past the last bucket: counted there, the max stays exact
	if h.max != time.Hour || h.quantile(1) != time.Hour {
		t.Errorf("max %s, quantile(1) %s", h.max, h.quantile(1))
	}
	h.add(0)
	if h.n != 1002 {
		t.Errorf("n = %d", h.n)
	}
}
