package importer

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spinehq/spine/accounting"
	"github.com/spinehq/spine/streams"
)

// The days split the import exactly: their responses and tokens sum to the
// summary's, and each response lands on the UTC day of its own line.
func TestPerDay(t *testing.T) {
	sum := run(t, nil, Options{}, fixtures(t))
	var tokens accounting.Tokens
	responses := 0
	for i, d := range sum.PerDay {
		tokens = addReported(tokens, d.Tokens)
		responses += d.Responses
		if i > 0 && (sum.PerDay[i-1].Date > d.Date || sum.PerDay[i-1].Date == d.Date && sum.PerDay[i-1].App >= d.App) {
			t.Fatalf("days out of order: %+v", sum.PerDay)
		}
	}
	if tokens != sum.Tokens || responses != sum.Responses {
		t.Fatalf("days sum to %d responses %+v, summary says %d %+v", responses, tokens, sum.Responses, sum.Tokens)
	}
	want := map[string]Day{
		// ccusage's alpha session spans two days; its rollout two more.
		"2026-01-09 claude-code": {Responses: 2, Tokens: report(streams.Usage{InputTokens: 300, OutputTokens: 125, CacheReadTokens: 30, CacheWriteTokens: 75})},
		"2026-01-10 claude-code": {Responses: 1, Tokens: report(streams.Usage{InputTokens: 300, OutputTokens: 125, CacheReadTokens: 40})},
		"2026-05-13 codex":       {Responses: 1, Tokens: report(streams.Usage{InputTokens: 750, OutputTokens: 125, CacheReadTokens: 250, ReasoningTokens: 75})},
		"2026-05-14 codex":       {Responses: 1, Tokens: report(streams.Usage{InputTokens: 2000, OutputTokens: 300, CacheReadTokens: 500, ReasoningTokens: 200})},
	}
	for _, d := range sum.PerDay {
		if w, ok := want[d.Date+" "+d.App]; ok {
			if d.Responses != w.Responses || d.Tokens != w.Tokens {
				t.Errorf("%s %s: %d responses %+v, want %d %+v", d.Date, d.App, d.Responses, d.Tokens, w.Responses, w.Tokens)
			}
			delete(want, d.Date+" "+d.App)
		}
	}
	if len(want) > 0 {
		t.Fatalf("days missing: %v in %+v", want, sum.PerDay)
	}
}

// A snapshot whose final usage comes on a later day moves its response
// there: a response is counted once, on the day of the usage counted.
func TestPerDaySnapshotMoves(t *testing.T) {
	dir := t.TempDir()
	lines := []string{`{"type":"assistant","sessionId":"s1","uuid":"u1","timestamp":"2026-03-01T23:59:59Z","requestId":"r1","message":{"id":"m1","role":"assistant","model":"m","content":[{"type":"text","text":"a"}],"usage":{"input_tokens":5,"output_tokens":1}}}`,
		`{"type":"assistant","sessionId":"s1","uuid":"u2","timestamp":"2026-03-02T00:00:01Z","requestId":"r1","message":{"id":"m1","role":"assistant","model":"m","content":[{"type":"text","text":"b"}],"usage":{"input_tokens":5,"output_tokens":9}}}`}
	if err := os.WriteFile(filepath.Join(dir, "s.jsonl"), []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	sum := run(t, nil, Options{}, dir)
	if len(sum.PerDay) != 1 || sum.PerDay[0].Date != "2026-03-02" || sum.PerDay[0].Responses != 1 ||
		sum.PerDay[0].Tokens != (report(streams.Usage{InputTokens: 5, OutputTokens: 9})) {
		t.Fatalf("per day: %+v", sum.PerDay)
	}
}
