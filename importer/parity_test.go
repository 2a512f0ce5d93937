package importer

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/spinehq/spine/accounting"
	"github.com/spinehq/spine/streams"
)

// ccusageVersion is the ccusage `make ccusage-parity` installs from npm
// (20.0.24 ships its native linux-x64 binary; 20.0.26 does not) and the one
// that wrote testdata/ccusage/.
const ccusageVersion = "20.0.24"

// ccusageReports are the reports compared: ccusage's own `<agent> <report>`
// commands, each run with --json --offline -z UTC.
var ccusageReports = []string{"claude session", "claude daily", "codex session", "codex daily"}

// parityLayout lays out the files ccusage reads as Claude Code and Codex
// would on disk: CLAUDE_CONFIG_DIR/projects/<project>/<file>.jsonl and
// CODEX_HOME/sessions/YYYY/MM/DD/<file>.jsonl. ccusage reads neither
// stream-json nor `codex exec --json` (they are not kept on disk), so
// those fixtures are not in it. testdata/resumed is a session split across
// two files plus one that repeats a response.
func parityLayout(t *testing.T) (claudeDir, codexDir string) {
	t.Helper()
	root := t.TempDir()
	claudeDir, codexDir = filepath.Join(root, "claude"), filepath.Join(root, "codex")
	cp := func(dst, src string) {
		files, err := filepath.Glob(src)
		if err != nil || len(files) == 0 {
			t.Fatalf("no files %s: %v", src, err)
		}
		if err := os.MkdirAll(dst, 0o755); err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dst, filepath.Base(f)), data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	projects, sessions := filepath.Join(claudeDir, "projects"), filepath.Join(codexDir, "sessions", "2026", "01", "01")
	cp(filepath.Join(projects, "ccusage-fixtures"), fixtures(t, "ccusage-fixtures", "ccusage__claude_*.jsonl"))
	cp(filepath.Join(projects, "claude-transcripts"), fixtures(t, "claude-transcripts", "*.jsonl"))
	cp(filepath.Join(projects, "spine-resumed"), filepath.Join("testdata", "resumed", "*.jsonl"))
	cp(sessions, fixtures(t, "ccusage-fixtures", "ccusage__codex_*.jsonl"))
	cp(sessions, fixtures(t, "codex-rollout", "*.jsonl"))
	return claudeDir, codexDir
}

// ccusageRow is one row of a ccusage session or daily report.
type ccusageRow struct {
	SessionID     string `json:"sessionId"`   // claude: the file's name; codex: its path under sessions/
	SessionFile   string `json:"sessionFile"` // codex: the file's name
	Date          string `json:"date"`
	Input         int64  `json:"inputTokens"`
	Output        int64  `json:"outputTokens"`
	CacheRead     int64  `json:"cacheReadTokens"`
	CacheCreation int64  `json:"cacheCreationTokens"`
	Reasoning     int64  `json:"reasoningOutputTokens"`
}

// tokens maps ccusage's counts onto spine's report: ccusage's inputTokens
// is input without cache (Claude's input_tokens; Codex's input minus
// cached), spine's input includes cache reads and writes
// (docs/counting.md#1-the-token-convention), so its input is ccusage's input + cacheRead + cacheCreation;
// reasoning only for Codex.
func (r ccusageRow) tokens() accounting.Tokens {
	return report(streams.Usage{InputTokens: r.Input, OutputTokens: r.Output, CacheReadTokens: r.CacheRead,
		CacheWriteTokens: r.CacheCreation, ReasoningTokens: r.Reasoning})
}

// file is the name, without extension, of the file a session row read.
func (r ccusageRow) file() string { return path.Base(cmp.Or(r.SessionFile, r.SessionID)) }

type ccusageReport struct {
	Sessions []ccusageRow `json:"sessions"`
	Daily    []ccusageRow `json:"daily"`
}

func recordedName(report string) string {
	return filepath.Join("testdata", "ccusage", strings.ReplaceAll(report, " ", "-")+".json")
}

// TestCcusageParity runs ccusage from npm and spine on the same files and
// compares input, output, cache-read, cache-write (and Codex reasoning)
// tokens per session and per day. `make ccusage-parity` installs the pinned
// ccusage and runs it; SPINE_CCUSAGE_RECORD=1 also rewrites testdata/ccusage/,
// which TestCcusageRecorded compares offline in `make test`.
func TestCcusageParity(t *testing.T) {
	ccusage := ccusageRunner(t)
	claudeDir, codexDir := parityLayout(t)
	reports := map[string]ccusageReport{}
	for _, name := range ccusageReports {
		out := ccusage(claudeDir, codexDir, append(strings.Fields(name), "--json", "--offline", "-z", "UTC")...)
		var r ccusageReport
		if err := json.Unmarshal(out, &r); err != nil {
			t.Fatalf("ccusage %s: %v\n%s", name, err, out)
		}
		reports[name] = r
		if os.Getenv("SPINE_CCUSAGE_RECORD") == "1" {
			if err := os.WriteFile(recordedName(name), out, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	compareWithCcusage(t, run(t, nil, Options{}, claudeDir, codexDir), reports)
}

// ccusageRunner finds the pinned ccusage ($SPINE_CCUSAGE, or where `make
// ccusage-parity` installs it; the test skips without one) and returns a
// function that runs it on a CLAUDE_CONFIG_DIR and CODEX_HOME.
func ccusageRunner(t *testing.T) func(claudeDir, codexDir string, args ...string) []byte {
	t.Helper()
	bin := os.Getenv("SPINE_CCUSAGE")
	if bin == "" {
		// Where `make ccusage-parity` (or .ci/run, wherever npm is) installs it.
		p, err := filepath.Abs(filepath.Join("..", "..", "bin", "ccusage-"+ccusageVersion, "node_modules", ".bin", "ccusage"))
		if _, statErr := os.Stat(p); err != nil || statErr != nil {
			t.Skip("needs ccusage from npm: run `make ccusage-parity` (SPINE_CCUSAGE=path/to/ccusage)")
		}
		bin = p
	}
	home := t.TempDir()
	ccusage := func(claudeDir, codexDir string, args ...string) []byte {
		cmd := exec.Command(bin, args...)
		cmd.Env = append(os.Environ(), "HOME="+home, "XDG_CONFIG_HOME="+filepath.Join(home, ".config"),
			"CLAUDE_CONFIG_DIR="+claudeDir, "CODEX_HOME="+codexDir, "TZ=UTC", "NO_COLOR=1")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("ccusage %v: %v\n%s", args, err, stderr.String())
		}
		return out
	}
	if v := strings.TrimSpace(string(ccusage(home, home, "--version"))); !strings.Contains(v, ccusageVersion) {
		t.Fatalf("ccusage --version says %q, want %s (make ccusage-parity installs it)", v, ccusageVersion)
	}
	return ccusage
}

// TestCcusageRecorded is the parity check offline: ccusage's reports on
// the same layout, recorded by TestCcusageParity, against spine's dry run.
func TestCcusageRecorded(t *testing.T) {
	claudeDir, codexDir := parityLayout(t)
	reports := map[string]ccusageReport{}
	for _, name := range ccusageReports {
		data, err := os.ReadFile(recordedName(name))
		if err != nil {
			t.Fatalf("%v (record it: SPINE_CCUSAGE_RECORD=1 make ccusage-parity)", err)
		}
		var r ccusageReport
		if err := json.Unmarshal(data, &r); err != nil {
			t.Fatalf("%s: %v", recordedName(name), err)
		}
		reports[name] = r
	}
	compareWithCcusage(t, run(t, nil, Options{}, claudeDir, codexDir), reports)
}

// compareWithCcusage fails on every difference but those README's
// "Importing history" documents as deliberate:
//   - a ccusage session is a file; a spine session is the app's session id,
//     so a spine session read from several files is compared with the sum
//     of their ccusage rows;
//   - spine records a session that reported no usage (a rollout without
//     token_count); ccusage lists only sessions with usage.
func compareWithCcusage(t *testing.T, sum *Summary, reports map[string]ccusageReport) {
	t.Helper()
	if sum.SkippedTotal != 0 {
		t.Fatalf("spine skipped %v", sum.Skipped)
	}
	for _, app := range []string{"claude-code", "codex"} {
		agent := strings.TrimSuffix(app, "-code")
		byFile := map[string]accounting.Tokens{}
		for _, r := range reports[agent+" session"].Sessions {
			if _, dup := byFile[r.file()]; dup {
				t.Fatalf("ccusage %s session: two rows for file %s", agent, r.file())
			}
			byFile[r.file()] = r.tokens()
		}
		if len(byFile) == 0 {
			t.Fatalf("ccusage %s session found no sessions: is the layout where it looks?", agent)
		}
		compared := 0
		for _, s := range sum.PerSession {
			if s.App != app {
				continue
			}
			var want accounting.Tokens
			seen := 0
			for _, f := range s.Files {
				name := strings.TrimSuffix(filepath.Base(f), ".jsonl")
				if tk, ok := byFile[name]; ok {
					want = addReported(want, tk)
					seen++
					delete(byFile, name)
				}
			}
			switch {
			case seen == 0 && s.Tokens == (report(streams.Usage{})):
				continue // no usage: ccusage lists no session
			case s.Tokens != want:
				t.Errorf("%s session %s (%v):\n spine   %+v\n ccusage %+v", app, s.SessionID, s.Files, s.Tokens, want)
			}
			compared++
		}
		for f, tk := range byFile {
			t.Errorf("ccusage %s counted file %s (%+v); spine has no session from it", agent, f, tk)
		}
		spineDays := map[string]accounting.Tokens{}
		for _, d := range sum.PerDay {
			if d.App == app {
				spineDays[d.Date] = d.Tokens
			}
		}
		ccDays := map[string]accounting.Tokens{}
		for _, r := range reports[agent+" daily"].Daily {
			ccDays[r.Date] = r.tokens()
		}
		for _, date := range slices.Sorted(func(yield func(string) bool) {
			for d := range spineDays {
				yield(d)
			}
			for d := range ccDays {
				if _, ok := spineDays[d]; !ok {
					yield(d)
				}
			}
		}) {
			if spineDays[date] != ccDays[date] {
				t.Errorf("%s day %s:\n spine   %+v\n ccusage %+v", app, date, spineDays[date], ccDays[date])
			}
		}
		t.Logf("%s: %d sessions and %d days compared", app, compared, len(ccDays))
	}
}

// ccusage's own snapshots of its --json rows (ccusage-fixtures/*.snap)
// decode into ccusageRow with every count the parity check compares: the
// field names the comparison relies on are ccusage's.
func TestCcusageSnapshotRows(t *testing.T) {
	for name, key := range map[string]string{"ccusage__snap_session_summary_json.snap": "session-a",
		"ccusage__snap_daily_summary_json.snap": "2026-01-02"} {
		data, err := os.ReadFile(fixtures(t, "ccusage-fixtures", name))
		if err != nil {
			t.Fatal(err)
		}
		_, body, _ := strings.Cut(string(data), "\n---\n")
		var r ccusageRow
		if err := json.Unmarshal([]byte(body), &r); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		got := fmt.Sprint(cmp.Or(r.SessionID, r.Date), r.tokens())
		want := fmt.Sprint(key, report(streams.Usage{InputTokens: 1234, OutputTokens: 567, CacheReadTokens: 10, CacheWriteTokens: 89}))
		if got != want {
			t.Fatalf("%s: decoded %s, want %s", name, got, want)
		}
	}
}
