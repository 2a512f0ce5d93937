package apps

import (
	"bufio"
	"context"
	"io"
	"testing"
	"time"

	"github.com/spinehq/spine/streams"
)

// memSink keeps what is published, in order; spine holds nothing before.
type memSink struct{ envs []*streams.Envelope }

func (m *memSink) Recorded(context.Context, string) (Recorded, error) { return Recorded{}, nil }

func (m *memSink) Publish(_ context.Context, e *streams.Envelope) error {
	m.envs = append(m.envs, e)
	return nil
}

// liveRuns are an app's output as it writes it, one record a line: the
// lines after which a live translation has published an answer chunk.
var liveRuns = []struct {
	name   string
	format Format
	lines  []string
	answer int // index of the line whose text is the first chunk
}{
	{"claude", FormatClaudeStream, []string{
		`{"type":"system","subtype":"init","session_id":"s-live","cwd":"/w","model":"claude-sonnet-4-5","apiKeySource":"none"}`,
		`{"type":"assistant","session_id":"s-live","uuid":"u1","message":{"id":"m1","role":"assistant","model":"claude-sonnet-4-5",` +
			`"content":[{"type":"text","text":"four"}],"usage":{"input_tokens":3,"output_tokens":2}}}`,
		`{"type":"result","subtype":"success","session_id":"s-live","uuid":"u2","result":"four","num_turns":1,` +
			`"total_cost_usd":0.01,"usage":{"input_tokens":3,"output_tokens":2}}`,
	}, 1},
	{"codex", FormatCodexExec, []string{
		`{"type":"thread.started","thread_id":"t-live"}`,
		`{"type":"turn.started"}`,
		`{"type":"item.completed","item":{"id":"item_0","type":"agent_message","text":"4"}}`,
		`{"type":"turn.completed","usage":{"input_tokens":10,"cached_input_tokens":0,"output_tokens":7}}`,
	}, 2},
}

// With Options.Live, a stream-json or exec session's start and chunks are
// published as their lines are translated, before the session ends, and
// its end carries the exit code Stream.Exit gave; without it they are held
// to the end (the importer's one batch a session).
func TestLivePublishesAsItGoes(t *testing.T) {
	ctx := context.Background()
	for _, r := range liveRuns {
		for _, live := range []bool{true, false} {
			sink := &memSink{}
			tr := NewTranslator(Options{Owner: streams.Owner{Org: "o", Member: "m"}, Sink: sink, Live: live})
			st := tr.Stream(Source{Path: r.name + " output", ModTime: time.Now(), Format: r.format})
			base := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
			for i, line := range r.lines {
				rec := Record{N: i + 1, Data: []byte(line), At: base.Add(time.Duration(i) * time.Second)}
				if skip, err := st.Record(ctx, rec); err != nil || skip != "" {
					t.Fatalf("%s line %d: skip %q, err %v", r.name, i+1, skip, err)
				}
				if i == r.answer && live {
					envs := withoutUsage(sink.envs) // and the usage so far, see TestLiveRunningUsage
					if len(envs) < 2 || envs[0].Type != streams.TypeSessionStart ||
						envs[len(envs)-1].Type != streams.TypeSessionChunk {
						t.Fatalf("%s live: after the answer's line, %d envelopes published, want the start and a chunk",
							r.name, len(envs))
					}
					if at := envs[len(envs)-1].At; !at.Equal(rec.At) {
						t.Fatalf("%s live: the chunk is at %v, its line was read at %v", r.name, at, rec.At)
					}
				}
			}
			if !live && len(sink.envs) != 0 {
				t.Fatalf("%s held: %d envelopes published before the end", r.name, len(sink.envs))
			}
			if err := st.Done(ctx); err != nil {
				t.Fatal(err)
			}
			st.Exit(3, "", "")
			if err := tr.Finish(ctx); err != nil {
				t.Fatal(err)
			}
			end := sink.envs[len(sink.envs)-1]
			if end.Type != streams.TypeSessionEnd || end.ExitCode == nil || *end.ExitCode != 3 || end.Status != "done" {
				t.Fatalf("%s live=%v: last envelope %s, exit %v, status %q", r.name, live, end.Type, end.ExitCode, end.Status)
			}
		}
	}
}

// withoutUsage is envs but the session.usage ones.
func withoutUsage(envs []*streams.Envelope) []*streams.Envelope {
	var out []*streams.Envelope
	for _, e := range envs {
		if e.Type != streams.TypeSessionUsage {
			out = append(out, e)
		}
	}
	return out
}

// Stream.Exit with a status overrides what the output said: a run stopped
// before its result line ends cancelled, with the error given.
func TestExitStatusOverridesTheOutput(t *testing.T) {
	ctx := context.Background()
	sink := &memSink{}
	tr := NewTranslator(Options{Owner: streams.Owner{Org: "o", Member: "m"}, Sink: sink, Live: true})
	st := tr.Stream(Source{Path: "codex output", ModTime: time.Now(), Format: FormatCodexExec})
	for i, line := range liveRuns[1].lines[:3] {
		if _, err := st.Record(ctx, Record{N: i + 1, Data: []byte(line)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.Done(ctx); err != nil {
		t.Fatal(err)
	}
	st.Exit(130, "cancelled", "interrupted")
	if err := tr.Finish(ctx); err != nil {
		t.Fatal(err)
	}
	end := sink.envs[len(sink.envs)-1]
	if end.Status != "cancelled" || end.Error != "interrupted" || *end.ExitCode != 130 {
		t.Fatalf("end: status %q, error %q, exit %d", end.Status, end.Error, *end.ExitCode)
	}
}

// NewLineReader yields a line as soon as it is complete, while the writer
// is still writing: NewRecordReader would wait for more.
func TestLineReaderDoesNotWaitForMore(t *testing.T) {
	pr, pw := io.Pipe()
	defer pw.Close()
	go pw.Write([]byte(liveRuns[1].lines[0] + "\n"))
	got := make(chan Record, 1)
	go func() {
		rec, _ := NewLineReader(bufio.NewReader(pr)).Next()
		got <- rec
	}()
	select {
	case rec := <-got:
		if string(rec.Data) != liveRuns[1].lines[0] {
			t.Fatalf("read %q", rec.Data)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no record while the writer is open")
	}
}
