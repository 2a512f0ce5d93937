package bench

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spinehq/spine/apps"
	"github.com/spinehq/spine/importer"
)

// The realistic corpus: main files near a megabyte, subagents' transcripts
// where Claude Code keeps them, prefix copies of some sessions; importing
// it all counts each session once, with what its main file and subagent
// hold and nothing more (the copies add no session, response or envelope).
func TestRealisticCorpus(t *testing.T) {
	rt := fixturesRealistic(t)
	dir := t.TempDir()
	c, err := rt.writeRealistic(dir, 8<<20, 0)
	if err != nil {
		t.Fatal(err)
	}
	files, err := realisticFiles(dir)
	if err != nil {
		t.Fatal(err)
	}
	var subs, copies int
	var size int64
	var mains []string
	for _, f := range files {
		st, err := os.Stat(f)
		if err != nil {
			t.Fatal(err)
		}
		size += st.Size()
		switch {
		case strings.Contains(f, "/subagents/agent-"):
			subs++
		case strings.Contains(f, "/copies-"):
			copies++
		default:
			mains = append(mains, f)
			if st.Size() < 700<<10 || st.Size() > 1400<<10 {
				t.Errorf("%s: %d bytes, want about 1 MB", f, st.Size())
			}
		}
		assertJSONLines(t, f)
	}
	if len(files) != c.Files || size != c.Bytes || subs != c.SubagentFiles || copies != c.PrefixCopies ||
		subs == 0 || copies == 0 || c.Bytes < 8<<20 {
		t.Fatalf("corpus %+v; on disk %d files, %d bytes, %d subagents, %d copies", c, len(files), size, subs, copies)
	}
	all, err := importer.Import(context.Background(), []string{dir}, importer.Options{})
	if err != nil {
		t.Fatal(err)
	}
	projects, err := importer.Import(context.Background(), []string{filepath.Join(dir, "projects")}, importer.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("corpus %+v: %d envelopes, %.1f a MB, %d responses", c, all.Envelopes, float64(all.Envelopes)/(float64(c.Bytes)/1e6), all.Responses)
	if all.Sessions != c.Sessions || projects.Sessions != c.Sessions || all.Responses != projects.Responses ||
		all.Envelopes != projects.Envelopes || all.SkippedTotal != 0 || all.RepeatedResponses != 0 {
		t.Fatalf("import of everything: %d sessions, %d responses, %d envelopes, skipped %v, %d repeated; "+
			"of the main files and subagents: %d sessions, %d responses, %d envelopes; corpus %d sessions",
			all.Sessions, all.Responses, all.Envelopes, all.Skipped, all.RepeatedResponses,
			projects.Sessions, projects.Responses, projects.Envelopes, c.Sessions)
	}
	// The subagents' responses are the session's: without their files it has fewer.
	alone, err := importer.Import(context.Background(), mains, importer.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if alone.Sessions != c.Sessions || alone.Responses >= all.Responses {
		t.Fatalf("main files alone: %d sessions, %d responses; with subagents %d", alone.Sessions, alone.Responses, all.Responses)
	}
}

// The realistic corpus with Codex: a quarter of the sessions are rollouts
// under codex/sessions/YYYY/MM/DD, of about a megabyte, which the import
// detects as Codex rollouts and counts as Codex sessions, each once, with
// the responses of every round (the running totals grow from round to
// round) and every stretched output; the Claude part is what it is alone.
func TestRealisticCorpusCodex(t *testing.T) {
	rt := fixturesRealistic(t)
	dir := t.TempDir()
	c, err := rt.writeRealistic(dir, 12<<20, DefaultRealisticCodex)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.PerFormat) != 2 || c.PerFormat[0].Format != apps.FormatClaudeTranscript || c.PerFormat[1].Format != apps.FormatCodexRollout {
		t.Fatalf("per format %+v", c.PerFormat)
	}
	claude, codex := c.PerFormat[0], c.PerFormat[1]
	if codex.Sessions < 2 || codex.Sessions != c.Sessions/4 || claude.Sessions+codex.Sessions != c.Sessions ||
		claude.Files+codex.Files != c.Files || claude.Bytes+codex.Bytes != c.Bytes || codex.Files != codex.Sessions {
		t.Fatalf("corpus %+v", c)
	}
	rollouts, err := filepath.Glob(filepath.Join(dir, "codex", "sessions", "2026", "01", "25", "rollout-2026-01-25T10-32-00-*.jsonl"))
	if err != nil || len(rollouts) != codex.Files {
		t.Fatalf("%d rollouts on disk (%v), corpus says %d", len(rollouts), err, codex.Files)
	}
	var size int64
	for _, f := range rollouts {
		st, err := os.Stat(f)
		if err != nil {
			t.Fatal(err)
		}
		if size += st.Size(); st.Size() < 700<<10 || st.Size() > 1400<<10 {
			t.Errorf("%s: %d bytes, want about 1 MB", f, st.Size())
		}
		assertJSONLines(t, f)
		assertRollout(t, f)
	}
	if size != codex.Bytes {
		t.Fatalf("rollouts hold %d bytes, corpus says %d", size, codex.Bytes)
	}
	// One rollout alone: a Codex session, its id the session_meta's, with
	// a response for every round's growing total.
	one, err := importer.Import(context.Background(), rollouts[:1], importer.Options{AllSessions: true})
	if err != nil {
		t.Fatal(err)
	}
	if one.Sessions != 1 || len(one.PerSession) != 1 || one.PerSession[0].Format != apps.FormatCodexRollout ||
		one.PerSession[0].App != "codex" || !strings.HasSuffix(rollouts[0], "-"+one.PerSession[0].AppSessionID+".jsonl") ||
		one.Responses < 30 || one.SkippedTotal != 0 {
		t.Fatalf("one rollout: %d sessions %+v, %d responses, skipped %v", one.Sessions, one.PerSession, one.Responses, one.Skipped)
	}
	codexOnly, err := importer.Import(context.Background(), codex.paths, importer.Options{App: "codex", AllSessions: true})
	if err != nil {
		t.Fatal(err)
	}
	all, err := importer.Import(context.Background(), []string{dir}, importer.Options{AllSessions: true})
	if err != nil {
		t.Fatal(err)
	}
	formats := map[apps.Format]int{}
	for _, s := range all.PerSession {
		formats[s.Format]++
	}
	if codexOnly.Sessions != codex.Sessions || codexOnly.SkippedTotal != 0 || formats[apps.FormatCodexRollout] != codex.Sessions ||
		formats[apps.FormatClaudeTranscript] != claude.Sessions || all.Sessions != c.Sessions || all.SkippedTotal != 0 ||
		all.RepeatedResponses != 0 || codexOnly.Responses < codex.Sessions*30 {
		t.Fatalf("codex import: %d sessions, %d responses, skipped %v; all: %d sessions %v, skipped %v, %d repeated; corpus %+v",
			codexOnly.Sessions, codexOnly.Responses, codexOnly.Skipped, all.Sessions, formats, all.Skipped, all.RepeatedResponses, c)
	}
	claudeOnly, err := importer.Import(context.Background(), claude.paths, importer.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if claudeOnly.Sessions != claude.Sessions || claudeOnly.Responses+codexOnly.Responses != all.Responses ||
		claudeOnly.Envelopes+codexOnly.Envelopes != all.Envelopes {
		t.Fatalf("claude part: %d sessions %d responses %d envelopes; codex %d, %d; all %d, %d",
			claudeOnly.Sessions, claudeOnly.Responses, claudeOnly.Envelopes, codexOnly.Responses, codexOnly.Envelopes,
			all.Responses, all.Envelopes)
	}
	t.Logf("codex part %+v: %d responses, %d envelopes, %.1f a MB", codex, codexOnly.Responses, codexOnly.Envelopes,
		float64(codexOnly.Envelopes)/(float64(codex.Bytes)/1e6))
}

// assertRollout checks a rollout is one session as Codex writes it: one
// session_meta, first; unique call ids, each call's output after it; the
// running total never going back; long function outputs.
func assertRollout(t *testing.T, path string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	calls, outputs := map[string]bool{}, map[string]bool{}
	var metas, long int
	var last float64
	for i, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var l struct {
			Type    string `json:"type"`
			Payload struct {
				Type   string          `json:"type"`
				CallID string          `json:"call_id"`
				Output json.RawMessage `json:"output"`
				Info   *struct {
					Total struct {
						Input float64 `json:"input_tokens"`
					} `json:"total_token_usage"`
				} `json:"info"`
			} `json:"payload"`
		}
		if err := json.Unmarshal([]byte(line), &l); err != nil {
			t.Fatalf("%s:%d: %v", path, i+1, err)
		}
		switch p := l.Payload; {
		case l.Type == "session_meta":
			if metas++; i != 0 {
				t.Fatalf("%s:%d: session_meta past the first line", path, i+1)
			}
		case p.Type == "function_call" || p.Type == "custom_tool_call":
			if calls[p.CallID] {
				t.Fatalf("%s:%d: call id %s again", path, i+1, p.CallID)
			}
			calls[p.CallID] = true
		case p.Type == "function_call_output" || p.Type == "custom_tool_call_output":
			if !calls[p.CallID] || outputs[p.CallID] {
				t.Fatalf("%s:%d: output of call %s without its call, or again", path, i+1, p.CallID)
			}
			outputs[p.CallID] = true
			if len(p.Output) >= 6<<10 {
				long++
			}
			if n := strings.Count(string(p.Output), "Original token count"); n > 1 {
				t.Fatalf("%s:%d: Codex's output header %d times", path, i+1, n)
			}
		case p.Type == "token_count" && p.Info != nil:
			if p.Info.Total.Input < last {
				t.Fatalf("%s:%d: running total went back from %v to %v", path, i+1, last, p.Info.Total.Input)
			}
			last = p.Info.Total.Input
		}
	}
	if metas != 1 || long < len(calls)/2 {
		t.Fatalf("%s: %d session_meta lines, %d long outputs of %d calls", path, metas, long, len(calls))
	}
}

// fixturesRealistic is the realistic template of the repository's fixtures.
func fixturesRealistic(t *testing.T) *realisticTemplate {
	t.Helper()
	wd, _ := os.Getwd()
	root, ok := moduleRoot(wd)
	if !ok {
		t.Fatal("no go.mod")
	}
	rt, err := loadRealistic(filepath.Join(root, "..", "shared", "fixtures"))
	if err != nil {
		t.Fatal(err)
	}
	return rt
}
