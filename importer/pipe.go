package importer

import (
	"context"
	"sync"

	"github.com/spinehq/spine/apps"
	"github.com/spinehq/spine/streams"
)

// pipeDepth is how many envelopes wait for the sink's goroutine: enough
// for the translation never to wait on one slow publish, few enough that
// the envelopes held stay a few megabytes.
const pipeDepth = 16

// pipe hands an import's sink calls to a goroutine of its own, so the
// sink's work on each envelope (a JetStreamSink redacts, encodes and sends
// it; docs/performance.md#import) runs beside the translation of the next
// records instead of after each. Every call reaches the sink on that one
// goroutine, in the order made, so the sink is used as from one goroutine
// and sees what it would have seen without the pipe. A Publish error is
// returned by a later Publish (the translation stops a few envelopes
// later) and by Flush; nothing is published after it.
type pipe struct {
	sink   Sink
	calls  chan pipeCall
	done   chan struct{} // closed when the goroutine has returned
	failed chan struct{} // closed once err is set
	fail   sync.Once
	err    error
}

// pipeCall is one call: a Publish (e), a Recorded (session) or a Flush.
type pipeCall struct {
	e       *streams.Envelope
	session string
	flush   bool
	reply   chan pipeReply // Recorded and Flush wait for their answer
}

type pipeReply struct {
	rec   apps.Recorded
	stats SinkStats
	err   error
}

// startPipe starts the sink's goroutine; stop ends it.
func startPipe(ctx context.Context, sink Sink) *pipe {
	p := &pipe{sink: sink, calls: make(chan pipeCall, pipeDepth), done: make(chan struct{}),
		failed: make(chan struct{})}
	go p.run(ctx)
	return p
}

func (p *pipe) run(ctx context.Context) {
	defer close(p.done)
	for c := range p.calls {
		switch {
		case c.flush:
			stats, err := p.sink.Flush(ctx)
			if p.err != nil {
				err = p.err
			}
			c.reply <- pipeReply{stats: stats, err: err}
		case c.reply != nil:
			rec, err := p.sink.Recorded(ctx, c.session)
			c.reply <- pipeReply{rec: rec, err: err}
		case p.err == nil:
			if err := p.sink.Publish(ctx, c.e); err != nil {
				p.fail.Do(func() { p.err = err; close(p.failed) })
			}
		}
	}
}

// Publish queues e for the sink.
func (p *pipe) Publish(ctx context.Context, e *streams.Envelope) error {
	select {
	case <-p.failed:
		return p.err
	default:
	}
	select {
	case p.calls <- pipeCall{e: e}:
		return nil
	case <-p.failed:
		return p.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Recorded asks the sink, after every envelope queued before.
func (p *pipe) Recorded(ctx context.Context, sessionID string) (apps.Recorded, error) {
	r, err := p.call(ctx, pipeCall{session: sessionID})
	return r.rec, err
}

// Flush waits for every envelope queued, then for the sink's Flush.
func (p *pipe) Flush(ctx context.Context) (SinkStats, error) {
	r, err := p.call(ctx, pipeCall{flush: true})
	return r.stats, err
}

func (p *pipe) call(ctx context.Context, c pipeCall) (pipeReply, error) {
	c.reply = make(chan pipeReply, 1)
	select {
	case p.calls <- c:
	case <-ctx.Done():
		return pipeReply{}, ctx.Err()
	}
	select {
	case r := <-c.reply:
		return r, r.err
	case <-ctx.Done():
		return pipeReply{}, ctx.Err()
	}
}

// stop ends the goroutine once the calls queued are done.
func (p *pipe) stop() {
	close(p.calls)
	<-p.done
}
