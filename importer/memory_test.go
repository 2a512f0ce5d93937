package importer

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spinehq/spine/streams"
)

// Sessions of one-file formats are ended once more than bounds.MaxOpenOneFile
// are open, least recently used first; a later record of one is skipped
// and reported, never published after its end.
func TestOneFileSessionsEndWhenIdle(t *testing.T) {
	defer func(n int) { bounds.MaxOpenOneFile = n }(bounds.MaxOpenOneFile)
	bounds.MaxOpenOneFile = 1
	dir := t.TempDir()
	src := fixtures(t, "codex-exec-json")
	files, _ := filepath.Glob(filepath.Join(src, "*.jsonl"))
	if len(files) != 3 {
		t.Fatalf("exec fixtures: %v", files)
	}
	for i, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("%d.jsonl", i)), data, 0o600); err != nil {
			t.Fatal(err)
		}
		if i == 0 { // the first run again, after the others: its session was ended
			if err := os.WriteFile(filepath.Join(dir, "z-again.jsonl"), data, 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
	sink := &memSink{}
	sum := run(t, sink, Options{}, dir)
	if sum.Sessions != 3 || len(sum.PerSession) != 3 {
		t.Fatalf("%d sessions: %+v", sum.Sessions, sum.PerSession)
	}
	first := sum.PerSession[0].SessionID
	lines := strings.Count(strings.TrimSpace(string(must(os.ReadFile(files[0])))), "\n") + 1
	if sum.SkippedTotal != lines {
		t.Fatalf("skipped %d, want the %d lines of z-again.jsonl: %+v", sum.SkippedTotal, lines, sum.Skipped)
	}
	for _, s := range sum.Skipped {
		if filepath.Base(s.File) != "z-again.jsonl" || !strings.Contains(s.Reason, "session "+first+" was already ended") {
			t.Fatalf("skip %+v", s)
		}
	}
	// The first session ended before the third started: it was dropped, not kept to the end.
	endAt, startAt := -1, -1
	for i, e := range sink.envs {
		if e.Type == streams.TypeSessionEnd && e.SessionID == first {
			endAt = i
		}
		if e.Type == streams.TypeSessionStart && e.SessionID == sum.PerSession[2].SessionID {
			startAt = i
		}
	}
	if endAt < 0 || startAt < 0 || endAt > startAt || len(sink.of(first, streams.TypeSessionEnd)) != 1 {
		t.Fatalf("first session's end at %d, third's start at %d", endAt, startAt)
	}
}

// The summary lists at most MaxSessionsListed sessions unless AllSessions;
// the totals count every one.
func TestSessionListBounded(t *testing.T) {
	var b strings.Builder
	n := MaxSessionsListed + 2
	for i := range n {
		fmt.Fprintf(&b, `{"type":"assistant","sessionId":"s%d","uuid":"u%d","timestamp":"2026-02-01T10:00:00Z","requestId":"r%d",`+
			`"message":{"id":"m%d","model":"claude-x","role":"assistant","content":[{"type":"text","text":"hi"}],"usage":{"input_tokens":1,"output_tokens":2}}}`+"\n", i, i, i, i)
	}
	path := filepath.Join(t.TempDir(), "many.jsonl")
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	sum := run(t, nil, Options{}, path)
	if sum.Sessions != n || len(sum.PerSession) != MaxSessionsListed || sum.OmittedSessions != 2 ||
		sum.Responses != n || sum.Tokens != (report(streams.Usage{InputTokens: int64(n), OutputTokens: 2 * int64(n)})) ||
		len(sum.PerDay) != 1 || sum.PerDay[0].Responses != n {
		t.Fatalf("%d sessions, %d listed, %d omitted, %d responses %+v", sum.Sessions, len(sum.PerSession),
			sum.OmittedSessions, sum.Responses, sum.Tokens)
	}
	if sum.PerSession[0].SessionID != "s0" || sum.PerSession[MaxSessionsListed-1].SessionID != fmt.Sprintf("s%d", MaxSessionsListed-1) {
		t.Fatalf("listed %s … %s", sum.PerSession[0].SessionID, sum.PerSession[MaxSessionsListed-1].SessionID)
	}
	all := run(t, nil, Options{AllSessions: true}, path)
	if len(all.PerSession) != n || all.OmittedSessions != 0 || all.Tokens != sum.Tokens {
		t.Fatalf("all sessions: %d listed, %d omitted", len(all.PerSession), all.OmittedSessions)
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
