package apps

import (
	"context"

	"github.com/spinehq/spine/streams"
)

// Sink is where a Translator's envelopes go.
type Sink interface {
	// Recorded says what spine already holds of a session, so a re-import
	// publishes nothing a recorder would store twice or dead-letter.
	Recorded(ctx context.Context, sessionID string) (Recorded, error)
	// Publish sends one valid envelope. An error stops the translation.
	Publish(ctx context.Context, e *streams.Envelope) error
}

// Claimer is a Sink that also knows which app sessions another producer
// on this machine has claimed as its own (spine collect's, which spine run
// claims its sessions to): with Options.LeaveRun, a session claimed while
// this translation writes it is ended where it is and left alone.
type Claimer interface {
	Claimed(sessionID string) bool
}

// Recorded is what spine holds of one session.
type Recorded struct {
	Started bool  // its start is recorded: do not publish another
	Ended   bool  // its end is recorded: publish nothing more
	LastSeq int64 // chunks at or below this seq are recorded
	// Kind is its start's kind (run, attach, open...), "" when unknown: a
	// session of kind run is spine run's, recorded from the app's own
	// output (see Options.LeaveRun).
	Kind string
	// Usage and Cost are what its end reported, when it has ended, else
	// its usage so far (session.usage), when the sink knows it (nil: none):
	// for a continuation to count only what came after.
	Usage *streams.Usage
	Cost  *float64
}
