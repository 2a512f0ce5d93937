package streams_test

import (
	"encoding/json"
	"testing"

	"github.com/spinehq/spine/streams"
)

// Add and Sub work count by count and leave Raw alone; SameCounts
// compares the counts alone.
func TestUsageArithmetic(t *testing.T) {
	raw := json.RawMessage(`{"format":"x"}`)
	u := streams.Usage{InputTokens: 1, OutputTokens: 2, CacheReadTokens: 3, CacheWriteTokens: 4, ReasoningTokens: 5, Raw: raw}
	o := streams.Usage{InputTokens: 10, OutputTokens: 20, CacheReadTokens: 30, CacheWriteTokens: 40, ReasoningTokens: 50,
		Raw: json.RawMessage(`{"format":"y"}`)}
	u.Add(o)
	want := streams.Usage{InputTokens: 11, OutputTokens: 22, CacheReadTokens: 33, CacheWriteTokens: 44, ReasoningTokens: 55}
	if !u.SameCounts(want) || string(u.Raw) != string(raw) {
		t.Fatalf("after Add: %+v (raw %s)", u, u.Raw)
	}
	u.Sub(o)
	back := streams.Usage{InputTokens: 1, OutputTokens: 2, CacheReadTokens: 3, CacheWriteTokens: 4, ReasoningTokens: 5}
	if !u.SameCounts(back) || string(u.Raw) != string(raw) {
		t.Fatalf("after Sub: %+v (raw %s)", u, u.Raw)
	}
	for _, d := range []streams.Usage{
		{InputTokens: 1}, {OutputTokens: 1}, {CacheReadTokens: 1}, {CacheWriteTokens: 1}, {ReasoningTokens: 1},
	} {
		v := u
		v.Add(d)
		if v.SameCounts(u) || u.SameCounts(v) {
			t.Errorf("%+v and %+v count the same", v, u)
		}
	}
	var zero streams.Usage
	if !zero.SameCounts(streams.Usage{Raw: raw}) {
		t.Error("Raw was compared")
	}
}
