package bench

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/spinehq/spine/streams"
)

// stallTimeout is how long a wait for a commit tolerates no commit at all.
const stallTimeout = 2 * time.Minute

// commits follows a projector through its OnCommit hook: how far its
// checkpoint is, how many batches it committed, and when each stream
// sequence was committed.
type commits struct {
	mu      sync.Mutex
	last    uint64
	batches int
	// at is when each stream sequence was committed, as time since base:
	// a map without pointers, which the garbage collector need not scan
	// (the latency phase keeps one entry a chunk).
	base time.Time
	at   map[uint64]time.Duration
	done map[uint64]bool // partitioned: committed beyond last, not yet contiguous
	wake chan struct{}   // closed and replaced on every commit
	// tap, when set, is given every commit instead of at keeping its
	// times, so a long soak holds no per-message state here.
	tap func(at time.Time, msgs []streams.Message)
	// times, while keepTimes, are the committed batches' times in commit
	// order (the latency phase's breakdown).
	times     []streams.BatchTimes
	keepTimes bool
	stored    map[uint64]int64 // while keepTimes: when JetStream stored each message, Unix ns
}

// onTimes is the projectors' OnTimes hook.
func (c *commits) onTimes(t streams.BatchTimes) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.keepTimes {
		c.times = append(c.times, t)
	}
}

// recordTimes starts (true) or stops keeping batch times; starting drops
// any kept before.
func (c *commits) recordTimes(on bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.keepTimes = on
	if on {
		c.times, c.stored = nil, map[uint64]int64{}
	}
}

// storedAt is when JetStream stored seq, as kept while recording times.
func (c *commits) storedAt(seq uint64) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	ns, ok := c.stored[seq]
	if !ok {
		return time.Time{}
	}
	return time.Unix(0, ns)
}

// batchTimes returns the kept batch times, sorted by last sequence.
func (c *commits) batchTimes() []streams.BatchTimes {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := slices.Clone(c.times)
	slices.SortFunc(out, func(a, b streams.BatchTimes) int { return cmp.Compare(a.Last, b.Last) })
	return out
}

// setTap hands every later commit to tap (see commits.tap).
func (c *commits) setTap(tap func(at time.Time, msgs []streams.Message)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.tap = tap
}

func newCommits() *commits {
	return &commits{base: time.Now(), at: map[uint64]time.Duration{}, wake: make(chan struct{})}
}

// onCommit is the hook. It takes one clock reading per batch: every message
// of a batch becomes readable at the same instant. It returns what of msgs
// was new to it (beyond the checkpoint it had seen), which a new leader's
// first batch after a takeover may not all be.
func (c *commits) onCommit(last uint64, msgs []streams.Message) (fresh counted) {
	now := time.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, m := range msgs {
		if m.Seq > c.last {
			fresh.add(m)
		}
	}
	if c.tap != nil {
		c.tap(now, msgs)
	} else {
		since := now.Sub(c.base)
		for _, m := range msgs {
			c.at[m.Seq] = since
			if c.keepTimes && !m.Time.IsZero() {
				c.stored[m.Seq] = m.Time.UnixNano()
			}
		}
		c.at[last] = since
	}
	c.last = max(c.last, last)
	c.batches++
	close(c.wake)
	c.wake = make(chan struct{})
	return fresh
}

// onCommitOrigin is the hook for partitioned projectors: batches come from
// several partitions in any order, so each message is marked by its origin
// sequence and last advances only over a contiguous run of committed ones.
// It returns what of msgs it had not seen committed before.
func (c *commits) onCommitOrigin(msgs []streams.Message) (fresh counted) {
	now := time.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.done == nil {
		c.done = map[uint64]bool{}
	}
	for _, m := range msgs {
		seq := originSeq(m.Header.Get("Nats-Stream-Source"))
		if seq == 0 || seq <= c.last || c.done[seq] {
			continue // a disconnect every partition sees, or a redelivery
		}
		c.done[seq] = true
		c.at[seq] = now.Sub(c.base)
		fresh.add(m)
	}
	for c.done[c.last+1] {
		delete(c.done, c.last+1)
		c.last++
	}
	c.batches++
	close(c.wake)
	c.wake = make(chan struct{})
	return fresh
}

// counted is how many envelopes commits held, how many of them were
// chunks, and in how many batches.
type counted struct{ envelopes, chunks, batches int64 }

func (n *counted) add(m streams.Message) {
	n.envelopes++
	if strings.HasSuffix(m.Subject, ".chunk") {
		n.chunks++
	}
}

// originSeq reads the origin sequence from a Nats-Stream-Source header
// ("SPINE_SESSIONS 42 …"); 0 when there is none.
func originSeq(h string) uint64 {
	f := strings.Fields(h)
	if len(f) < 2 {
		return 0
	}
	n, _ := strconv.ParseUint(f[1], 10, 64)
	return n
}

// waitFor blocks until seq is committed and returns when that happened.
// It gives up when nothing is committed for stallTimeout: a projector that
// stopped making progress fails the run instead of hanging it.
func (c *commits) waitFor(ctx context.Context, seq uint64) (time.Time, error) {
	stall := time.NewTimer(stallTimeout)
	defer stall.Stop()
	for {
		c.mu.Lock()
		if c.last >= seq {
			since, ok := c.at[seq]
			c.mu.Unlock()
			if !ok { // inside a batch whose messages the hook was not given
				return time.Now(), nil
			}
			return c.base.Add(since), nil
		}
		wake := c.wake
		c.mu.Unlock()
		select {
		case <-wake:
			stall.Reset(stallTimeout)
		case <-stall.C:
			return time.Time{}, fmt.Errorf("%w: sequence %d not committed after %s without progress", ErrStalled, seq, stallTimeout)
		case <-ctx.Done():
			return time.Time{}, context.Cause(ctx)
		}
	}
}

// committedAt is when seq was committed (zero if it was not).
func (c *commits) committedAt(seq uint64) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	since, ok := c.at[seq]
	if !ok {
		return time.Time{}
	}
	return c.base.Add(since)
}

// batchCount is the number of batches committed so far.
func (c *commits) batchCount() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.batches
}
