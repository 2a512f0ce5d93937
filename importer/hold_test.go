package importer

import (
	"slices"
	"testing"

	"github.com/spinehq/spine/streams"
)

// A one-file session's envelopes reach the log together, start first and
// end last, so the recorder writes it in one batch; past the bounds a
// session is released and streams, and the same envelopes are published.
func TestOneFileSessionsArePublishedTogether(t *testing.T) {
	dirs := []string{fixtures(t, "codex-exec-json"), fixtures(t, "claude-stream-json")}
	held := &memSink{}
	sum := run(t, held, Options{}, dirs...)
	if sum.Sessions < 4 {
		t.Fatalf("%d sessions from the exec and stream-json fixtures", sum.Sessions)
	}
	for _, imp := range sum.PerSession {
		var at []int
		for i, e := range held.envs {
			if e.SessionID == imp.SessionID {
				at = append(at, i)
			}
		}
		if len(at) < 2 || at[len(at)-1]-at[0] != len(at)-1 {
			t.Fatalf("session %s published at %v: not together", imp.SessionID, at)
		}
		if first, last := held.envs[at[0]], held.envs[at[len(at)-1]]; first.Type != streams.TypeSessionStart ||
			last.Type != streams.TypeSessionEnd {
			t.Fatalf("session %s: %s first, %s last", imp.SessionID, first.Type, last.Type)
		}
	}
	ids := func(s *memSink) []string {
		var out []string
		for _, e := range s.envs {
			out = append(out, e.ID)
		}
		slices.Sort(out)
		return out
	}
	for name, bound := range map[string]*int{"per session": &bounds.MaxHeldPerSession, "in all": &bounds.MaxHeld} {
		t.Run(name, func(t *testing.T) {
			defer func(n int) { *bound = n }(*bound)
			*bound = 1
			streamed := &memSink{}
			run(t, streamed, Options{}, dirs...)
			if !slices.Equal(ids(streamed), ids(held)) {
				t.Fatalf("released early, %d envelopes; held, %d", len(streamed.envs), len(held.envs))
			}
			for _, imp := range sum.PerSession {
				var seqs []int64
				for _, e := range streamed.envs {
					if e.SessionID == imp.SessionID && e.Type == streams.TypeSessionChunk {
						seqs = append(seqs, e.Seq)
					}
				}
				if !slices.IsSorted(seqs) {
					t.Fatalf("session %s chunks out of order: %v", imp.SessionID, seqs)
				}
			}
		})
	}
}
