package telemetry

import (
	"encoding/json"

	"github.com/spinehq/spine/streams"
)

// The token counts each app's request event carries, as it names them:
// usage.raw keeps the ones sent, as sent.
var (
	claudeCounts = []string{"input_tokens", "output_tokens", "cache_read_tokens", "cache_creation_tokens", "cost_usd"}
	codexCounts  = []string{"input_token_count", "output_token_count", "cached_token_count", "cache_write_token_count",
		"reasoning_token_count", "tool_token_count"}
)

// claudeRequest is Claude Code's api_request: one model request, its
// request_id the transcript's requestId, input_tokens without the cache,
// cost_usd Claude Code's own estimate.
func claudeRequest(e Event) (*streams.Telemetry, string) {
	a := e.Attrs
	id := requestKey(a, "request_id", "claude-code:"+recordKey(e))
	u := &streams.Usage{InputTokens: tokens(a, "input_tokens"), OutputTokens: tokens(a, "output_tokens"),
		CacheReadTokens: tokens(a, "cache_read_tokens"), CacheWriteTokens: tokens(a, "cache_creation_tokens"),
		Raw: raw(a, claudeCounts)}
	t := &streams.Telemetry{Kind: streams.TelemetryRequest, Source: streams.TelemetryOTLP, RequestID: id,
		Model: str(a, "model"), Effort: str(a, "effort"), QuerySource: str(a, "query_source"), Usage: u,
		TotalCost: cost(a, "cost_usd"), DurationMs: count(a, "duration_ms")}
	return t, id
}

// codexRequest is the response.completed sse_event that carries the
// counts (Codex sends two per response, the counts on one). Codex's
// input_token_count includes the cached part, which spine counts apart;
// its output includes reasoning, which is kept beside it. Its
// cache_write_token_count stays in raw, uncounted: the rollout door has no
// cache writes (docs/counting.md#4-codex-rollouts), and the two Codex doors
// count a response alike. Codex names no request: the event's time and
// place key it.
func codexRequest(e Event) (*streams.Telemetry, string) {
	a := e.Attrs
	if _, ok := a.Int("input_token_count"); !ok {
		return nil, ""
	}
	id := "codex:" + recordKey(e)
	if !streams.ValidKey(id) {
		id = hashKey("codex", id)
	}
	input, cached := tokens(a, "input_token_count"), tokens(a, "cached_token_count")
	cached = min(cached, input)
	u := &streams.Usage{InputTokens: input - cached, CacheReadTokens: cached, OutputTokens: tokens(a, "output_token_count"),
		ReasoningTokens: tokens(a, "reasoning_token_count"), Raw: raw(a, codexCounts)}
	t := &streams.Telemetry{Kind: streams.TelemetryRequest, Source: streams.TelemetryOTLP, RequestID: id,
		Model: str(a, "model"), Effort: str(a, "model_reasoning_effort"), Usage: u, DurationMs: count(a, "duration_ms")}
	return t, id
}

// otlpTool is a tool_result: which tool, whether it succeeded, how long it
// took. Never its content: Codex's arguments and output (the command line
// and what it printed, verbatim) stay out, as does Claude Code's
// tool_parameters. idKey names the tool use's id (tool_use_id, call_id);
// a result without one cannot be told from another and is none.
func otlpTool(e Event, idKey string) (*streams.Telemetry, string) {
	a := e.Attrs
	use := str(a, idKey)
	if use == "" {
		return nil, ""
	}
	t := &streams.Telemetry{Kind: streams.TelemetryTool, Source: streams.TelemetryOTLP, ToolUseID: toolUseID(use),
		Tool: str(a, "tool_name"), Phase: streams.PhasePost, DurationMs: count(a, "duration_ms"),
		ErrorType: str(a, "error_type")}
	if ok, set := a.Bool("success"); set {
		t.Success = &ok
	}
	return t, t.ToolUseID + ":" + t.Phase
}

// otlpPrompt is a user_prompt: its id (Claude Code's prompt.id) and
// length; the text only as a digest, and only when the app sent it (its
// placeholder otherwise).
func otlpPrompt(e Event) (*streams.Telemetry, string) {
	a := e.Attrs
	t := &streams.Telemetry{Kind: streams.TelemetryPrompt, Source: streams.TelemetryOTLP,
		PromptLength: count(a, "prompt_length"), PromptDigest: promptDigest(str(a, "prompt"))}
	if id := str(a, "prompt.id"); streams.ValidKey(id) {
		t.PromptID = id
		return t, id
	}
	return t, recordKey(e)
}

// str is a string attribute, "" when absent or not a string.
func str(a Attrs, key string) string {
	s, _ := a.Str(key)
	return s
}

// tokens is a token count, 0 when absent; a count no real report holds
// (negative, past streams.MaxTokens) is read as none.
func tokens(a Attrs, key string) int64 {
	n, _ := a.Int(key)
	if n < 0 || n > streams.MaxTokens {
		return 0
	}
	return n
}

// count is a duration or length, nil when absent or out of range.
func count(a Attrs, key string) *int64 {
	n, ok := a.Int(key)
	if !ok || n < 0 || n > streams.MaxTelemetryCount {
		return nil
	}
	return &n
}

// cost is a reported cost in USD, nil when absent or out of range: a cost
// is never made up, nor a nonsense one kept.
func cost(a Attrs, key string) *float64 {
	f, ok := a.Float(key)
	if !ok || f < 0 || f > streams.MaxCost {
		return nil
	}
	return &f
}

// raw is the attributes keys names, as sent, as a JSON object: the app's
// own report beside spine's buckets. nil when it sent none of them.
func raw(a Attrs, keys []string) json.RawMessage {
	m := map[string]any{}
	for _, k := range keys {
		if v, ok := a[k]; ok {
			m[k] = v
		}
	}
	if len(m) == 0 {
		return nil
	}
	b, err := json.Marshal(m)
	if err != nil {
		return nil // a value JSON cannot hold (NaN): the counts are kept, the report is not
	}
	return b
}
