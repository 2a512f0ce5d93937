package streams_test

import (
	"errors"
	"strings"
	"testing"

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
