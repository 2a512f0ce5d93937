package streams_test

import (
	"bytes"
	"context"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/spinehq/spine/streams"
)

// preparingHandler prepares every message as it is fetched, panicking on
// one, and counts the messages Apply meets prepared and unprepared.
type preparingHandler struct {
	*seenHandler
	prepared, unprepared atomic.Int64
}

func (h *preparingHandler) Prepare(m *streams.Message) {
	if bytes.Equal(m.Data, []byte("m-3")) {
		panic("a preparer bug")
	}
	m.Prepared = string(m.Data)
}

func (h *preparingHandler) Apply(ctx context.Context, tx pgx.Tx, msgs []streams.Message) ([]error, error) {
	for _, m := range msgs {
		if p, _ := m.Prepared.(string); p == string(m.Data) {
			h.prepared.Add(1)
		} else {
			h.unprepared.Add(1)
		}
	}
	return h.seenHandler.Apply(ctx, tx, msgs)
}

// A Preparer's Prepare runs on each fetched message before Apply sees it;
// one that panics leaves that message unprepared, and it is applied all
// the same, never a crash.
func TestPreparerPreparesEveryMessage(t *testing.T) {
	r := newRig(t)
	h := &preparingHandler{seenHandler: r.handler}
	r.start(func(c *streams.ProjectorConfig) { c.Handler = h })
	seqs := r.publishN(10)
	r.waitCommitted(seqs[len(seqs)-1])
	r.wantSeen(seqs)
	if h.prepared.Load() != 9 || h.unprepared.Load() != 1 {
		t.Fatalf("Apply met %d messages prepared and %d not; want 9 and 1 (the one whose Prepare panicked)",
			h.prepared.Load(), h.unprepared.Load())
	}
}
