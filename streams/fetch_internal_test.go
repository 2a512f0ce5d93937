package streams

import "testing"

func TestNextBatchSizeHoldsFetchMaxBytes(t *testing.T) {
	for _, c := range []struct {
		n, size, want int
	}{
		{500, 256, 500}, // small envelopes: bounded by count
		{500, 1 << 20, FetchMaxBytes/(1<<20) + 1}, // 1 MiB envelopes: 17, not 500
		{3, MaxEnvelopeBytes, 5},                  // the largest: a few
		{2, 0, 500},                               // empty bodies say nothing of size
	} {
		got := nextBatchSize(c.n, c.n*c.size, 500)
		if got != c.want {
			t.Errorf("after %d × %d B: next batch %d, want %d", c.n, c.size, got, c.want)
		}
		if c.size > 0 && (got-1)*c.size > FetchMaxBytes {
			t.Errorf("after %d × %d B: %d messages of that size exceed %d bytes", c.n, c.size, got, FetchMaxBytes)
		}
	}
}
