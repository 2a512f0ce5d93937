package importer

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/spinehq/spine/accounting"
	"github.com/spinehq/spine/apps"
	"github.com/spinehq/spine/streams"
)

// fixtures is ../shared/fixtures beside the repository root (the directory
// holding go.mod), as in CI where shared/ is copied beside the clone.
func fixtures(t testing.TB, parts ...string) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			break
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the test's directory")
		}
		dir = parent
	}
	return filepath.Join(append([]string{dir, "..", "shared", "fixtures"}, parts...)...)
}

// memSink keeps what it is given and answers Recorded from it, the way
// the log would: a test of what a re-import publishes.
type memSink struct {
	envs []*streams.Envelope
}

func (m *memSink) Recorded(_ context.Context, id string) (apps.Recorded, error) {
	var r apps.Recorded
	for _, e := range m.envs {
		if e.SessionID != id {
			continue
		}
		switch e.Type {
		case streams.TypeSessionStart:
			r.Started = true
		case streams.TypeSessionEnd:
			r.Ended, r.Usage, r.Cost = true, e.Usage, e.TotalCost
		case streams.TypeSessionChunk:
			r.LastSeq = max(r.LastSeq, e.Seq)
		}
	}
	return r, nil
}

func (m *memSink) Publish(_ context.Context, e *streams.Envelope) error {
	if err := e.Validate(); err != nil {
		return err
	}
	data, err := e.Marshal()
	if err != nil {
		return err
	}
	if _, err := streams.Decode(data); err != nil {
		return err
	}
	m.envs = append(m.envs, e)
	return nil
}

func (m *memSink) Flush(context.Context) (SinkStats, error) { return SinkStats{}, nil }

func (m *memSink) of(sessionID, typ string) []*streams.Envelope {
	var out []*streams.Envelope
	for _, e := range m.envs {
		if e.SessionID == sessionID && e.Type == typ {
			out = append(out, e)
		}
	}
	return out
}

func run(t *testing.T, sink Sink, opts Options, paths ...string) *Summary {
	t.Helper()
	opts.Sink = sink
	sum, err := Import(context.Background(), paths, opts)
	if err != nil {
		t.Fatalf("import %v: %v", paths, err)
	}
	return sum
}

func sessionOf(t *testing.T, sum *Summary, id string) Imported {
	t.Helper()
	for _, s := range sum.PerSession {
		if s.SessionID == id {
			return s
		}
	}
	t.Fatalf("no session %s in %+v", id, sum.PerSession)
	return Imported{}
}

// addReported is a + b, count by count (accounting.Tokens has no sum of
// its own: reports sum in SQL).
func addReported(a, b accounting.Tokens) accounting.Tokens {
	return accounting.Tokens{Input: a.Input + b.Input, Output: a.Output + b.Output, CacheRead: a.CacheRead + b.CacheRead,
		CacheWrite: a.CacheWrite + b.CacheWrite, Reasoning: a.Reasoning + b.Reasoning, Total: a.Total + b.Total}
}
