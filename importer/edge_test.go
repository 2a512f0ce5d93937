package importer

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/spinehq/spine/apps"
	"github.com/spinehq/spine/streams"
)

func TestTruncatedLastLine(t *testing.T) {
	sum := run(t, &memSink{}, Options{}, "testdata/truncated")
	if sum.SkippedTotal != 1 || sum.Skipped[0].Line != 3 || !strings.Contains(sum.Skipped[0].Reason, "truncated") {
		t.Fatalf("skipped %+v", sum.Skipped)
	}
	if s := sessionOf(t, sum, "trunc-1"); s.Responses != 1 ||
		s.Tokens != report(streams.Usage{InputTokens: 3, OutputTokens: 5, CacheReadTokens: 11, CacheWriteTokens: 7}) {
		t.Fatalf("session %+v", s)
	}
}

func TestUnknownEventTypes(t *testing.T) {
	sink := &memSink{}
	sum := run(t, sink, Options{}, "testdata/unknown")
	if sum.SkippedTotal != 1 || sum.Skipped[0].Line != 3 || !strings.Contains(sum.Skipped[0].Reason, "turn.telemetry") {
		t.Fatalf("skipped %+v", sum.Skipped)
	}
	s := sessionOf(t, sum, "unk-1")
	if s.Responses != 1 || s.Tokens != (report(streams.Usage{InputTokens: 60, CacheReadTokens: 40, OutputTokens: 9})) || s.Chunks != 1 {
		t.Fatalf("session %+v", s)
	}
}

func TestSessionSplitAcrossFiles(t *testing.T) {
	sink := &memSink{}
	sum := run(t, sink, Options{}, "testdata/split", "testdata/split/a.jsonl") // a.jsonl once
	s := sessionOf(t, sum, "split-1")
	if len(sum.PerSession) != 1 || len(s.Files) != 2 || s.Responses != 2 ||
		s.Tokens != (report(streams.Usage{InputTokens: 11, OutputTokens: 22, CacheWriteTokens: 33, CacheReadTokens: 44})) {
		t.Fatalf("split session %+v", sum.PerSession)
	}
	// The Bash call in a.jsonl completes with its result in b.jsonl.
	var cmd *streams.Event
	for _, c := range sink.of("split-1", streams.TypeSessionChunk) {
		if c.Event != nil {
			cmd = c.Event
		}
	}
	if cmd == nil || cmd.Command != "ls" || cmd.Output != "a.txt\nb.txt" {
		t.Fatalf("command across files: %+v", cmd)
	}
}

func TestDuplicatedSnapshots(t *testing.T) {
	sink := &memSink{}
	sum := run(t, sink, Options{}, "testdata/snapshots")
	s := sessionOf(t, sum, "snap-1")
	// Four lines, one response, its final usage (output 42, not 1 or 85).
	if s.Responses != 1 ||
		s.Tokens != report(streams.Usage{InputTokens: 5, OutputTokens: 42, CacheWriteTokens: 100, CacheReadTokens: 200}) {
		t.Fatalf("session %+v", s)
	}
	writes := 0
	for _, c := range sink.of("snap-1", streams.TypeSessionChunk) {
		if c.Event != nil && c.Event.Action == "file_write" {
			writes++
		}
	}
	if writes != 1 {
		t.Fatalf("%d writes from one repeated tool_use", writes)
	}
}

func TestResumedSessionCountsOnce(t *testing.T) {
	sum := run(t, &memSink{}, Options{}, "testdata/resumed")
	if a, b := sessionOf(t, sum, "split-1"), sessionOf(t, sum, "resumed-2"); a.Responses != 2 || b.Responses != 1 ||
		b.Tokens != (report(streams.Usage{InputTokens: 1, OutputTokens: 1, CacheReadTokens: 1, CacheWriteTokens: 1})) || sum.RepeatedResponses != 1 || sum.Responses != 3 {
		t.Fatalf("resumed: %+v %+v repeated %d", a, b, sum.RepeatedResponses)
	}
}

func TestNonUTF8(t *testing.T) {
	sink := &memSink{}
	sum := run(t, sink, Options{}, "testdata/nonutf8")
	if sum.RepairedLines != 2 || sum.SkippedTotal != 0 {
		t.Fatalf("repaired %d skipped %+v", sum.RepairedLines, sum.Skipped)
	}
	start := sink.of("utf-1", streams.TypeSessionStart)[0]
	if start.Prompt != "caf\uFFFD \uFFFD" { // a run of bad bytes is one U+FFFD
		t.Fatalf("prompt %q", start.Prompt)
	}
}

// The same files give the same envelopes, byte for byte; a second import
// into a sink that holds the first publishes nothing.
func TestReimportIsDeterministic(t *testing.T) {
	a, b := &memSink{}, &memSink{}
	run(t, a, Options{}, fixtures(t))
	run(t, b, Options{}, fixtures(t))
	if len(a.envs) != len(b.envs) {
		t.Fatalf("%d then %d envelopes", len(a.envs), len(b.envs))
	}
	for i := range a.envs {
		x, _ := a.envs[i].Marshal()
		y, _ := b.envs[i].Marshal()
		if string(x) != string(y) {
			t.Fatalf("envelope %d differs:\n%s\n%s", i, x, y)
		}
	}
	n := len(a.envs)
	sum := run(t, a, Options{}, fixtures(t))
	if len(a.envs) != n || sum.Sessions != 0 || sum.AlreadyRecorded != len(sum.PerSession) {
		t.Fatalf("re-import published %d envelopes; %+v", len(a.envs)-n, sum)
	}
	// An import cut short resumes after the last chunk spine holds.
	cut := &memSink{envs: append([]*streams.Envelope(nil), b.envs[:5]...)}
	run(t, cut, Options{}, fixtures(t))
	if len(cut.envs) != len(b.envs) {
		t.Fatalf("resumed import holds %d envelopes, want %d", len(cut.envs), len(b.envs))
	}
}

func TestOptions(t *testing.T) {
	for _, o := range []Options{{App: "cursor"}, {Format: "csv"}, {Billing: "free"},
		{App: "codex", Format: apps.FormatClaudeTranscript}, {Owner: streams.Owner{Org: "a b", Member: "c"}}} {
		if _, err := Import(context.Background(), []string{"testdata"}, o); err == nil {
			t.Errorf("options %+v accepted", o)
		}
	}
	sink := &memSink{}
	sum := run(t, sink, Options{App: "codex", Billing: "metered"}, fixtures(t, "codex-exec-json"), fixtures(t, "claude-transcripts"))
	if sum.Sessions != 3 || sum.SkippedTotal != 5 {
		t.Fatalf("--app codex: %d sessions, skipped %+v", sum.Sessions, sum.Skipped)
	}
	for _, e := range sink.envs {
		if e.Type == streams.TypeSessionEnd && e.Billing != "metered" {
			t.Fatalf("billing %q", e.Billing)
		}
	}
}

// A large input streams through bounded memory: the heap stays far below
// the input's size however many lines it has.
func TestLargeInputBoundedMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("writes a 48 MB file")
	}
	path := filepath.Join(t.TempDir(), "big.jsonl")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Repeat("lorem ipsum ", 300)
	var size int64
	for i := 0; size < 48<<20; i++ {
		n, _ := f.WriteString(`{"type":"assistant","sessionId":"big-` + strconv.Itoa(i/2000) + `","uuid":"u` + strconv.Itoa(i) +
			`","timestamp":"2026-01-01T00:00:00Z","requestId":"r` + strconv.Itoa(i) + `","message":{"id":"m` + strconv.Itoa(i) +
			`","model":"claude-x","content":[{"type":"text","text":"` + text + `"}],"usage":{"input_tokens":1,"output_tokens":2}}}` + "\n")
		size += int64(n)
	}
	f.Close()
	runtime.GC()
	var peak uint64
	sample := func(Progress) {
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		peak = max(peak, ms.HeapInuse)
	}
	sum := run(t, DiscardSink{}, Options{Progress: sample}, path)
	sample(Progress{})
	if sum.Bytes != size || sum.Responses == 0 || sum.Tokens.Output != 2*int64(sum.Responses) {
		t.Fatalf("summary %+v", sum.Tokens)
	}
	if peak > uint64(size)/2 {
		t.Fatalf("heap in use peaked at %d MB for a %d MB input", peak>>20, size>>20)
	}
	t.Logf("%d MB, %d responses: heap in use peaked at %d MB", size>>20, sum.Responses, peak>>20)
}
