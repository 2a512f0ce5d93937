package telemetry_test

import (
	"strings"
	"testing"

	"github.com/spinehq/spine/accounting"
	"github.com/spinehq/spine/telemetry"
)

// Codex's cache_write_token_count is kept in usage.raw, not counted: the
// rollout door (docs/counting.md#4-codex-rollouts) has no cache writes and
// counts Codex's input_tokens, cache included, as the input; the telemetry
// door counts a response as the same input, whatever cache writes it names.
func TestCodexCacheWritesCountAsTheRolloutDoorCounts(t *testing.T) {
	e := named(events(t, "codex-json-logs"), "codex.sse_event")
	var completed telemetry.Event
	for _, ev := range e {
		if _, ok := ev.Attrs.Int("input_token_count"); ok {
			completed = ev
			break
		}
	}
	completed.Attrs = copyAttrs(completed.Attrs)
	completed.Attrs["cache_write_token_count"] = int64(250)
	env, err := telemetry.Translate(completed, received)
	if err != nil || env == nil {
		t.Fatalf("translate: %v, %v", env, err)
	}
	u := env.Telemetry.Usage
	input, _ := completed.Attrs.Int("input_token_count")
	cached, _ := completed.Attrs.Int("cached_token_count")
	if n := accounting.Normalise(u); n.Input != input || n.CacheRead != cached || n.CacheWrite != 0 {
		t.Fatalf("tokens %+v, want input %d (Codex's input_token_count), cache read %d, no cache write", n, input, cached)
	}
	if !strings.Contains(string(u.Raw), `"cache_write_token_count":250`) {
		t.Fatalf("usage.raw %s: want the cache writes as Codex reported them", u.Raw)
	}
}
