package importer

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/spinehq/spine/accounting"
	"github.com/spinehq/spine/streams"
)

// Tools that checkpoint Claude Code transcripts save one session as several
// files, each a prefix of it up to some line. Imported together, in any
// order and with any overlap, they must give what the longest copy gives
// alone — the same envelopes, tokens and days — and that must be the final
// usage of every response, counted here independently of the importer.
func TestSplitCopiesOfOneSession(t *testing.T) {
	files, err := filepath.Glob(fixtures(t, "claude-transcripts", "*.jsonl"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no transcripts: %v", err)
	}
	for _, full := range files {
		t.Run(filepath.Base(full), func(t *testing.T) {
			lines, copies := splitCopies(t, full, t.TempDir())
			alone := &memSink{}
			want := run(t, alone, Options{}, copies[len(copies)-1])
			responses, tokens := finalUsage(t, lines)
			if want.Responses != responses || want.Tokens != report(tokens) {
				t.Fatalf("the whole file alone: %d responses %+v; its final snapshots: %d %+v",
					want.Responses, want.Tokens, responses, tokens)
			}
			for name, order := range copyOrders(copies) {
				got := &memSink{}
				sum := run(t, got, Options{}, order...)
				if sum.Responses != want.Responses || sum.Tokens != want.Tokens || !slices.Equal(sum.PerDay, want.PerDay) {
					t.Errorf("%s: %d responses %+v %+v; the longest copy alone: %d %+v %+v", name,
						sum.Responses, sum.Tokens, sum.PerDay, want.Responses, want.Tokens, want.PerDay)
				}
				sameEnvelopes(t, name, got, alone)
			}
		})
	}
}

// The split copies as ccusage reads them (one project folder): its daily
// report gives what spine gives for the copies together.
func TestCcusageSplitCopies(t *testing.T) {
	ccusage := ccusageRunner(t)
	files, err := filepath.Glob(fixtures(t, "claude-transcripts", "*.jsonl"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no transcripts: %v", err)
	}
	claudeDir := t.TempDir()
	for i, full := range files {
		dir := filepath.Join(claudeDir, "projects", fmt.Sprintf("p%d", i))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		splitCopies(t, full, dir)
	}
	var r ccusageReport
	if out := ccusage(claudeDir, t.TempDir(), "claude", "daily", "--json", "--offline", "-z", "UTC"); json.Unmarshal(out, &r) != nil {
		t.Fatalf("ccusage claude daily: %s", out)
	}
	sum := run(t, nil, Options{}, claudeDir)
	got := map[string]accounting.Tokens{}
	for _, d := range sum.PerDay {
		got[d.Date] = d.Tokens
	}
	for _, d := range r.Daily {
		if got[d.Date] != d.tokens() {
			t.Errorf("day %s: spine %+v, ccusage %+v", d.Date, got[d.Date], d.tokens())
		}
		delete(got, d.Date)
	}
	if len(got) != 0 || len(r.Daily) == 0 {
		t.Errorf("days only spine has: %v (ccusage has %d)", got, len(r.Daily))
	}
}

// splitCopies writes copies of a real transcript into dir, each a prefix of
// it cut at one of prefixCuts, the whole file last, and returns its lines
// and the copies' paths (longest last).
func splitCopies(t *testing.T, full, dir string) (lines [][]byte, copies []string) {
	t.Helper()
	data, err := os.ReadFile(full)
	if err != nil {
		t.Fatal(err)
	}
	lines = bytes.SplitAfter(data, []byte("\n"))
	if len(lines[len(lines)-1]) == 0 {
		lines = lines[:len(lines)-1]
	}
	for i, n := range append(prefixCuts(t, lines), len(lines)) {
		p := filepath.Join(dir, fmt.Sprintf("copy-%02d.jsonl", i))
		if err := os.WriteFile(p, bytes.Join(lines[:n], nil), 0o600); err != nil {
			t.Fatal(err)
		}
		copies = append(copies, p)
	}
	return lines, copies
}

// prefixCuts are the line counts the copies end at: after every assistant
// line followed by another snapshot of the same response (a copy cut in the
// middle of a response), and after every third line between responses. The
// test needs at least one cut in the middle of a response whose snapshot
// there carries less output than its last: the case a copy can get wrong.
func prefixCuts(t *testing.T, lines [][]byte) []int {
	t.Helper()
	var cuts []int
	partial := false
	for i := 1; i < len(lines); i++ {
		prev, next := snapshotOf(lines[i-1]), snapshotOf(lines[i])
		switch {
		case prev.key != "" && prev.key == next.key:
			cuts = append(cuts, i)
			last := next
			for j := i + 1; j < len(lines); j++ {
				if s := snapshotOf(lines[j]); s.key == prev.key {
					last = s
				}
			}
			partial = partial || prev.tokens.OutputTokens < last.tokens.OutputTokens
		case i%3 == 0:
			cuts = append(cuts, i)
		}
	}
	if !partial {
		t.Skip("no response in this transcript has a partial snapshot to cut at")
	}
	return cuts
}

// copyOrders are orders to import the copies in: longest first, longest
// last, and a few shuffles (seeded, so a failure can be replayed), some
// reading a copy twice.
func copyOrders(copies []string) map[string][]string {
	first := slices.Clone(copies)
	slices.Reverse(first)
	orders := map[string][]string{"longest last": copies, "longest first": first}
	rng := rand.New(rand.NewPCG(9, uint64(len(copies))))
	for i := range 4 {
		o := slices.Clone(copies)
		rng.Shuffle(len(o), func(a, b int) { o[a], o[b] = o[b], o[a] })
		if i%2 == 1 {
			o = append(o, o[rng.IntN(len(o))])
		}
		orders[fmt.Sprintf("shuffle %d", i)] = o
	}
	return orders
}

// snapshot is one assistant line's response key and usage, read here with
// encoding/json rather than the importer's own decoding.
type snapshot struct {
	key    string
	tokens streams.Usage
}

func snapshotOf(line []byte) snapshot {
	var l struct {
		Type      string `json:"type"`
		RequestID string `json:"requestId"`
		Message   struct {
			ID    string `json:"id"`
			Model string `json:"model"`
			Usage *struct {
				Input       int64 `json:"input_tokens"`
				Output      int64 `json:"output_tokens"`
				CacheCreate int64 `json:"cache_creation_input_tokens"`
				CacheRead   int64 `json:"cache_read_input_tokens"`
			} `json:"usage"`
		} `json:"message"`
	}
	if json.Unmarshal(line, &l) != nil || l.Type != "assistant" || l.Message.ID == "" || l.Message.Usage == nil ||
		l.Message.Model == "<synthetic>" {
		return snapshot{}
	}
	u := l.Message.Usage
	return snapshot{key: l.Message.ID + "\x00" + l.RequestID,
		tokens: streams.Usage{InputTokens: u.Input, OutputTokens: u.Output, CacheReadTokens: u.CacheRead,
			CacheWriteTokens: u.CacheCreate}}
}

// finalUsage counts a whole transcript the plain way: each response once,
// with the usage on its last line in the file.
func finalUsage(t *testing.T, lines [][]byte) (int, streams.Usage) {
	t.Helper()
	last := map[string]streams.Usage{}
	for _, l := range lines {
		if s := snapshotOf(l); s.key != "" {
			last[s.key] = s.tokens
		}
	}
	var sum streams.Usage
	for _, tk := range last {
		sum.Add(tk)
	}
	return len(last), sum
}

// sameEnvelopes fails unless got published what want did, byte for byte.
func sameEnvelopes(t *testing.T, name string, got, want *memSink) {
	t.Helper()
	if len(got.envs) != len(want.envs) {
		t.Errorf("%s: %d envelopes; the longest copy alone: %d", name, len(got.envs), len(want.envs))
		return
	}
	for i := range got.envs {
		x, _ := got.envs[i].Marshal()
		y, _ := want.envs[i].Marshal()
		if !bytes.Equal(x, y) {
			t.Errorf("%s: envelope %d:\n %s\nthe longest copy alone:\n %s", name, i, x, y)
			return
		}
	}
}
