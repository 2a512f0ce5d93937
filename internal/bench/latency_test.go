package bench

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/spinehq/spine/streams"
)

// ackLater is a publish's future whose ack (or error) comes from another
// goroutine after a while, as JetStream's do.
type ackLater struct {
	ok  chan *jetstream.PubAck
	err chan error
}

func (f *ackLater) Ok() <-chan *jetstream.PubAck { return f.ok }
func (f *ackLater) Err() <-chan error            { return f.err }
func (f *ackLater) Msg() *nats.Msg               { return nil }

// fakeLog numbers what is published from 1001 on, acking each after a
// moment; the chunk numbered fail (0: none) fails and dup is acked as a
// duplicate.
type fakeLog struct {
	n         uint64
	fail, dup uint64
	published []*streams.Envelope
}

func (l *fakeLog) publish(e *streams.Envelope) (jetstream.PubAckFuture, error) {
	l.n++
	l.published = append(l.published, e)
	f := &ackLater{ok: make(chan *jetstream.PubAck, 1), err: make(chan error, 1)}
	seq := 1000 + l.n
	fail, dup := l.n == l.fail, l.n == l.dup
	time.AfterFunc(time.Millisecond, func() {
		if fail {
			f.err <- errors.New("no stream")
			return
		}
		f.ok <- &jetstream.PubAck{Sequence: seq, Duplicate: dup}
	})
	return f, nil
}

// The latency phase keeps each chunk's publish time and the sequence its
// ack gave, in publish order, and counts what it sent.
func TestOfferKeepsEachChunksSequence(t *testing.T) {
	w := newWorkload("t", 8, 0.5)
	var log fakeLog
	o, err := offer(context.Background(), log.publish, w, []string{"a", "b", "c"}, 1000, 60*time.Millisecond, ackBacklog)
	if err != nil {
		t.Fatal(err)
	}
	if len(o.at) != 60 || len(log.published) != 60 {
		t.Fatalf("%d publish times for %d published, want 60", len(o.at), len(log.published))
	}
	for i, seq := range o.seqs {
		if seq != 1001+uint64(i) {
			t.Fatalf("chunk %d: sequence %d, want %d", i, seq, 1001+i)
		}
		if i > 0 && o.publishedAt(i).Before(o.publishedAt(i-1)) {
			t.Fatalf("chunk %d published before chunk %d", i, i-1)
		}
	}
	if o.sent.messages != 60 || o.sent.chunks != 60 || o.sent.events == 0 || o.sent.events == 60 {
		t.Errorf("sent %+v, want 60 chunks, some of them events", o.sent)
	}
	// Round-robin: chunk i is session i mod 3's next seq.
	if e := log.published[4]; e.SessionID != "b" || e.Seq != 2 {
		t.Errorf("chunk 4 is session %q's seq %d, want b's 2", e.SessionID, e.Seq)
	}
}

// A failed or duplicate ack ends the phase with an error that says so,
// and stops the publisher, also one waiting for room in a full backlog
// (of 1) when the resolver stops.
func TestOfferStopsAtABadAck(t *testing.T) {
	for _, tc := range []struct {
		log     fakeLog
		backlog int
		want    string
	}{
		{fakeLog{fail: 3}, ackBacklog, "publish chunk 2: no stream"},
		{fakeLog{dup: 5}, ackBacklog, "publish chunk 4: stored as a duplicate"},
		{fakeLog{fail: 1}, 1, "publish chunk 0: no stream"},
	} {
		w := newWorkload("t", 8, 0)
		done := make(chan error, 1)
		go func() {
			_, err := offer(context.Background(), tc.log.publish, w, []string{"a"}, 100000, 2*time.Second, tc.backlog)
			done <- err
		}()
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("offer: %v, want %q", err, tc.want)
			}
		case <-time.After(time.Minute):
			t.Fatalf("offer (backlog %d) did not return after a bad ack", tc.backlog)
		}
		if n := len(tc.log.published); n >= 200000 {
			t.Errorf("the publisher went on after the bad ack: %d published", n)
		}
	}
}

// The collector's counters are read: a cycle forced between two readings
// is counted, with CPU, and the live heap is known.
func TestReadGC(t *testing.T) {
	before := readGC()
	runtime.GC()
	after := readGC()
	if g := after.since(before); g.Cycles < 1 || g.LiveHeapBytes == 0 || g.CPUSeconds < g.IdleCPUSeconds || g.IdleCPUSeconds < 0 {
		t.Errorf("gc over a forced cycle = %+v", g)
	}
	if after.CPUSeconds <= before.CPUSeconds {
		t.Errorf("gc cpu %g s, then %g s over a forced cycle", before.CPUSeconds, after.CPUSeconds)
	}
}

// The commit times kept a message are the instant of its batch's commit,
// and the stored times JetStream's own, exactly.
func TestCommitsKeepTimes(t *testing.T) {
	c := newCommits()
	c.recordTimes(true)
	stored := time.Date(2026, 12, 2, 6, 0, 0, 123456789, time.UTC)
	before := time.Now()
	c.onCommit(8, []streams.Message{{Seq: 7, Time: stored}, {Seq: 8, Time: stored.Add(time.Nanosecond)}})
	after := time.Now()
	for _, seq := range []uint64{7, 8} {
		at := c.committedAt(seq)
		if at.Before(before) || at.After(after) {
			t.Errorf("sequence %d committed at %v, want within [%v, %v]", seq, at, before, after)
		}
		if got, err := c.waitFor(context.Background(), seq); err != nil || !got.Equal(at) {
			t.Errorf("waitFor(%d) = %v, %v; want %v", seq, got, err, at)
		}
	}
	if got := c.storedAt(7); !got.Equal(stored) {
		t.Errorf("stored at %v, want %v", got, stored)
	}
	if got := c.storedAt(8); !got.Equal(stored.Add(time.Nanosecond)) {
		t.Errorf("stored at %v, want %v", got, stored.Add(time.Nanosecond))
	}
	if !c.committedAt(9).IsZero() || !c.storedAt(9).IsZero() {
		t.Errorf("sequence 9 has times: %v, %v", c.committedAt(9), c.storedAt(9))
	}
}
