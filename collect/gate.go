package collect

import (
	"context"

	"github.com/spinehq/spine/importer"
	"github.com/spinehq/spine/streams"
)

// gate is the sink the translator sees. While muted it drops what is
// published: on start-up the collector replays each file up to its offset,
// whose envelopes spine already accepted, so the translation's state (its
// seq numbers, pending tool calls, lines seen) is what it was, and nothing
// is sent twice.
//
// It also marks what makes a session collected rather than imported: a
// start is kind attach (its appSessionRef is the app's session id, which
// the translation sets) and carries the machine as its workerId.
type gate struct {
	importer.Sink
	machine string
	claims  string // spine run's claims directory (see claim.go); "" for none
	muted   bool
	sent    int // envelopes passed on
}

func (g *gate) Publish(ctx context.Context, e *streams.Envelope) error {
	if g.muted {
		return nil
	}
	if e.Type == streams.TypeSessionStart {
		c := *e
		c.Kind, c.WorkerID = "attach", g.machine
		e = &c
	}
	g.sent++
	return g.Sink.Publish(ctx, e)
}
