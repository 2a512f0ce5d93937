package importer

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/spinehq/spine/apps"
	"github.com/spinehq/spine/streams"
)

// Every fixture folder, every file: the sessions found, each response
// counted once, the tokens each session reports.
func TestFixtures(t *testing.T) {
	type want struct {
		format    apps.Format
		responses int
		tokens    streams.Usage
		model     string
		cost      float64 // 0 = absent
		status    string
	}
	// Claude transcript totals are ccusage's rule (dedupe on message.id +
	// requestId) applied to each file; they equal the sums of each
	// response's final (and, here, largest) usage.
	cases := map[string]want{
		// ccusage-fixtures: ccusage's own inputs
		"session-alpha": {apps.FormatClaudeTranscript, 3, streams.Usage{InputTokens: 600, OutputTokens: 250, CacheReadTokens: 70, CacheWriteTokens: 75}, "claude-sonnet-4-20250514", 0, "done"},
		"session-beta":  {apps.FormatClaudeTranscript, 2, streams.Usage{InputTokens: 130, OutputTokens: 60, CacheReadTokens: 40, CacheWriteTokens: 15}, "claude-haiku-4-5-20251001", 0, "done"},
		// Σ input_tokens = 3500 (= input + cacheRead), Σ cached = 750, Σ output = 425, Σ reasoning = 275
		"ccusage__codex_project-alpha_session-alpha": {apps.FormatCodexRollout, 2, streams.Usage{InputTokens: 2750, OutputTokens: 425, CacheReadTokens: 750, ReasoningTokens: 275}, "gpt-5.3-codex", 0, "done"},
		// claude-stream-json: result usage is the app's total (lines carry partial output_tokens)
		"sample-session-id": {apps.FormatClaudeStream, 4, streams.Usage{InputTokens: 630, OutputTokens: 265, CacheReadTokens: 315}, "claude-test-model", 0.0347, "done"},
		// result.modelUsage (every thread of the run), not result.usage
		// (the main thread's: input 18, output 424, 17254, 25067)
		"40e7b02d-c0f9-4876-9010-f514d4eb0603": {apps.FormatClaudeStream, 1, streams.Usage{InputTokens: 38, OutputTokens: 765, CacheReadTokens: 28775, CacheWriteTokens: 31159}, "claude-opus-4-5-20251101", 0.24722425, "done"},
		"fa570000-aaaa-aaaa-aaaa-aaaaaaaaaaaa": {apps.FormatClaudeStream, 3, streams.Usage{InputTokens: 35, OutputTokens: 340, CacheReadTokens: 139, CacheWriteTokens: 300}, "claude-sonnet-5", 0, "done"},
		"a905e63f-aaaa-aaaa-aaaa-aaaaaaaaaaaa": {apps.FormatClaudeStream, 3, streams.Usage{InputTokens: 21, OutputTokens: 2511, CacheReadTokens: 103176, CacheWriteTokens: 66440}, "claude-haiku-4-5-20251001", 0.105, "done"},
		// claude-transcripts: 27 lines / 10 responses, 15 / 10, …
		"cfa1e878-62b5-4e40-b281-bbf9b250d766": {apps.FormatClaudeTranscript, 10, streams.Usage{InputTokens: 1223, OutputTokens: 833, CacheReadTokens: 185540, CacheWriteTokens: 21565}, "claude-sonnet-4-5-20250929", 0, "done"},
		"0e26ec2f-937e-482c-b889-bc126f996913": {apps.FormatClaudeTranscript, 1, streams.Usage{InputTokens: 10, OutputTokens: 148, CacheReadTokens: 13522, CacheWriteTokens: 2128}, "claude-sonnet-4-5-20250929", 0, "done"},
		"8122657c-fe54-4dc9-89a3-20049e8a84f7": {apps.FormatClaudeTranscript, 10, streams.Usage{InputTokens: 25, OutputTokens: 1508, CacheReadTokens: 148958, CacheWriteTokens: 12593}, "claude-sonnet-4-5-20250929", 0, "done"},
		"609efeca-2f51-4118-b077-e91c9fe63f73": {apps.FormatClaudeTranscript, 3, streams.Usage{InputTokens: 24, OutputTokens: 276, CacheReadTokens: 20952, CacheWriteTokens: 23122}, "claude-sonnet-4-5-20250929", 0, "done"},
		"0db46778-18a1-4d84-853f-d4dc72a07a1b": {apps.FormatClaudeTranscript, 6, streams.Usage{InputTokens: 24, OutputTokens: 660, CacheReadTokens: 87863, CacheWriteTokens: 2151}, "claude-sonnet-4-5-20250929", 0, "done"},
		// codex-exec-json: no model, no cost
		"019a2d7a-41c4-78b1-b7cc-a45d62a89cd5": {apps.FormatCodexExec, 1, streams.Usage{InputTokens: 2946, OutputTokens: 7}, "", 0, "done"},
		"019a2d7a-6455-7170-a661-c6d8b94c630a": {apps.FormatCodexExec, 1, streams.Usage{InputTokens: 1048, OutputTokens: 129, CacheReadTokens: 4992}, "", 0, "done"},
		"019a2d7a-8e1c-7111-b1a6-8cec551a55a0": {apps.FormatCodexExec, 1, streams.Usage{InputTokens: 1912, OutputTokens: 51, CacheReadTokens: 4096}, "", 0, "done"},
		// codex-rollout: the crud file re-emits token_count 4 times with an
		// unchanged total: 5 responses, not 9; Σ last_token_usage would
		// give input 84834 instead of the final total 47257.
		"019bf4b5-e7b0-75a0-8bf2-05fbf1b13c9b":             {apps.FormatCodexRollout, 5, streams.Usage{InputTokens: 3097, OutputTokens: 300, CacheReadTokens: 44160, ReasoningTokens: 64}, "gpt-5.2-codex", 0, "done"},
		"jnarowski-agentcmd__individual_event-token-count": {apps.FormatCodexRollout, 1, streams.Usage{InputTokens: 335, OutputTokens: 246, CacheReadTokens: 2560, ReasoningTokens: 192}, "", 0, "done"},
		"01997e76-d124-7592-9cac-2ec05abbca08":             {apps.FormatCodexRollout, 0, streams.Usage{}, "", 0, "done"},
	}
	sink := &memSink{}
	sum := run(t, sink, Options{}, fixtures(t))
	if sum.SkippedTotal != 0 || len(sum.PerSession) != len(cases) {
		t.Fatalf("skipped %v; sessions %d, want %d", sum.Skipped, len(sum.PerSession), len(cases))
	}
	for id, w := range cases {
		got := sessionOf(t, sum, id)
		if got.Format != w.format || got.Responses != w.responses || got.Tokens != report(w.tokens) || got.Model != w.model || got.Status != w.status {
			t.Errorf("%s:\n got %s %d responses %+v model %q %s\nwant %s %d responses %+v model %q %s", id, got.Format,
				got.Responses, got.Tokens, got.Model, got.Status, w.format, w.responses, w.tokens, w.model, w.status)
		}
		if (got.TotalCost == nil) != (w.cost == 0) || got.TotalCost != nil && *got.TotalCost != w.cost {
			t.Errorf("%s: cost %v, want %v", id, got.TotalCost, w.cost)
		}
		ends := sink.of(id, streams.TypeSessionEnd)
		if len(ends) != 1 || len(sink.of(id, streams.TypeSessionStart)) != 1 {
			t.Fatalf("%s: %d ends", id, len(ends))
		}
		checkEnd(t, ends[0], got)
	}
}

// checkEnd: the end carries the normalised usage, the raw report, the
// model and cost as reported, and billing unknown.
func checkEnd(t *testing.T, e *streams.Envelope, got Imported) {
	t.Helper()
	if e.Billing != "" || e.Model != got.Model || (e.TotalCost == nil) != (got.TotalCost == nil) {
		t.Errorf("%s end: billing %q model %q cost %v", e.SessionID, e.Billing, e.Model, e.TotalCost)
	}
	if got.Responses == 0 && got.Tokens == (report(streams.Usage{})) {
		if e.Usage != nil {
			t.Errorf("%s: usage %+v on a session that reported none", e.SessionID, e.Usage)
		}
		return
	}
	u := e.Usage
	if u == nil || report(*u) != got.Tokens {
		t.Fatalf("%s: end usage %+v, summary %+v", e.SessionID, u, got.Tokens)
	}
	var raw struct {
		Format  apps.Format       `json:"format"`
		Reports []json.RawMessage `json:"reports"`
	}
	if err := json.Unmarshal(u.Raw, &raw); err != nil || raw.Format != got.Format {
		t.Fatalf("%s: raw %s: %v", e.SessionID, u.Raw, err)
	}
	if got.Format == apps.FormatClaudeTranscript && len(raw.Reports) != 0 || got.Format.App() == "codex" && len(raw.Reports) == 0 {
		t.Errorf("%s: %d raw reports for a %s", e.SessionID, len(raw.Reports), got.Format)
	}
}

// The ccusage snapshots show its JSON: spine's four counts map onto its
// inputTokens, outputTokens, cacheReadTokens and cacheCreationTokens, whose
// sum is its totalTokens.
func TestCcusageSnapshotShape(t *testing.T) {
	for _, name := range []string{"ccusage__snap_session_summary_json.snap", "ccusage__snap_daily_summary_json.snap"} {
		data, err := os.ReadFile(fixtures(t, "ccusage-fixtures", name))
		if err != nil {
			t.Fatal(err)
		}
		_, body, _ := strings.Cut(string(data), "\n---\n")
		var row struct {
			Input, Output, CacheRead, CacheCreation, Total int64
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal([]byte(body), &m); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for k, p := range map[string]*int64{"inputTokens": &row.Input, "outputTokens": &row.Output,
			"cacheReadTokens": &row.CacheRead, "cacheCreationTokens": &row.CacheCreation, "totalTokens": &row.Total} {
			if err := json.Unmarshal(m[k], p); err != nil {
				t.Fatalf("%s: %s: %v", name, k, err)
			}
		}
		tk := streams.Usage{InputTokens: row.Input, OutputTokens: row.Output, CacheReadTokens: row.CacheRead,
			CacheWriteTokens: row.CacheCreation}
		if tk.InputTokens+tk.OutputTokens+tk.CacheReadTokens+tk.CacheWriteTokens != row.Total {
			t.Fatalf("%s: %+v does not sum to totalTokens %d", name, tk, row.Total)
		}
	}
}

// The fixtures' actions become events: a command with its output, a file
// read with the file's raw content, a write, an MCP call.
func TestFixtureEvents(t *testing.T) {
	sink := &memSink{}
	run(t, sink, Options{}, fixtures(t, "claude-stream-json"), fixtures(t, "claude-transcripts"), fixtures(t, "codex-exec-json"))
	var actions = map[string]int{}
	for _, e := range sink.envs {
		if e.Event != nil {
			actions[e.Event.Action]++
		}
	}
	for _, a := range []string{"command", "file_read", "file_write", "mcp_call"} {
		if actions[a] == 0 {
			t.Errorf("no %s events in %v", a, actions)
		}
	}
	ls := sink.of("40e7b02d-c0f9-4876-9010-f514d4eb0603", streams.TypeSessionChunk)
	var cmd *streams.Event
	for _, c := range ls {
		if c.Event != nil && c.Event.Action == "command" {
			cmd = c.Event
		}
	}
	if cmd == nil || cmd.Command != "ls -la" || !strings.Contains(cmd.Output, "total 1976") {
		t.Fatalf("gleam session: the ls across two files is %+v", cmd)
	}
	start := sink.of("8122657c-fe54-4dc9-89a3-20049e8a84f7", streams.TypeSessionStart)[0]
	if !strings.Contains(start.Prompt, "JOKE.md") || start.Kind != "open" || start.Workspace == "" {
		t.Fatalf("crud start: %+v", start)
	}
}
