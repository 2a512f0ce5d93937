package streams_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spinehq/spine/streams"
)

// A projector whose consumer is deleted under it counts the failed fetches
// and shows in Health (it once fetched in a tight loop, healthy), then
// starts over, recreating the consumer: what is published after is
// projected and Health clears.
func TestProjectorThatCannotFetchIsVisible(t *testing.T) {
	r := newRig(t)
	seqs := r.publishN(2)
	p := r.start(func(c *streams.ProjectorConfig) { c.StuckAfter = 1 })
	r.waitCommitted(seqs[1])
	if err := r.js.DeleteConsumer(t.Context(), streams.StreamSessions, projectorName); err != nil {
		t.Fatal(err)
	}
	err := waitHealth(t, p, func(err error) bool { return err != nil })
	var stuck *streams.StuckError
	if !errors.As(err, &stuck) || !strings.HasPrefix(stuck.Failure, "fetching") {
		t.Fatalf("health of a projector whose consumer is gone: %v", err)
	}
	more := r.publishN(2)
	r.waitCommitted(more[1])
	waitHealth(t, p, func(err error) bool { return err == nil })
}

// The lag is measured after each commit, not read from the batch's last
// message at delivery: messages published while a batch applies count,
// with the periodic measurement out of the way (LagInterval an hour).
func TestLagCountsWhatArrivedDuringTheBatch(t *testing.T) {
	r := newRig(t)
	release := make(chan struct{})
	defer close(release)
	r.handler.beforeApply = func(call int64, _ []streams.Message) {
		switch call {
		case 1:
			for _, d := range []string{"m-1", "m-2"} {
				if _, err := r.js.Publish(context.Background(), "spine.session.s-0.chunk", []byte(d)); err != nil {
					t.Error(err)
				}
			}
		case 2:
			<-release // the next batch waits, so the lag is what it was after the first commit
		}
	}
	seqs := r.publish("m-0")
	r.start(func(c *streams.ProjectorConfig) { c.LagInterval = time.Hour })
	r.waitCommitted(seqs[0])
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	timeout := time.After(waitTimeout)
	for r.metric("spine_projector_lag") != 2 {
		select {
		case <-tick.C:
		case <-timeout:
			t.Fatalf("lag %v after the first commit, with 2 messages waiting", r.metric("spine_projector_lag"))
		}
	}
}

// OnCommit hears of each message once, when a batch was partly applied
// one message at a time around an isolated one.
func TestEachMessageIsReportedOnce(t *testing.T) {
	r := newRig(t)
	var mu sync.Mutex
	reported := map[uint64]int{}
	seqs := r.publish("m-0", "fail", "m-2", "m-3")
	r.start(func(c *streams.ProjectorConfig) {
		c.Handler = refusingHandler{r.handler}
		c.OnCommit = func(last uint64, msgs []streams.Message) {
			mu.Lock()
			for _, m := range msgs {
				reported[m.Seq]++
			}
			mu.Unlock()
			r.commits.hook(last, msgs)
		}
	})
	r.waitCommitted(seqs[3])
	mu.Lock()
	defer mu.Unlock()
	for _, seq := range seqs {
		if reported[seq] != 1 {
			t.Errorf("sequence %d reported %d times: %v", seq, reported[seq], reported)
		}
	}
}
