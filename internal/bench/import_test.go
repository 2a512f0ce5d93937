package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spinehq/spine/apps"
	"github.com/spinehq/spine/importer"
)

// The corpus is the fixtures' lines copied with fresh ids: every copy adds
// the same sessions and responses, nothing is skipped, the raw baseline
// and the importer read the same lines. No wall-clock figure is checked.
func TestImportCorpus(t *testing.T) {
	wd, _ := os.Getwd()
	root, ok := moduleRoot(wd)
	if !ok {
		t.Fatal("no go.mod")
	}
	fixturesDir := filepath.Join(root, "..", "shared", "fixtures")
	dir := t.TempDir()
	for _, f := range apps.Formats {
		ct, err := loadTemplate(fixturesDir, f)
		if err != nil {
			t.Fatal(err)
		}
		onePath := corpusName(dir, f, "one")
		_, _, copySize, err := ct.writeCorpus(onePath, 1)
		if err != nil {
			t.Fatal(err)
		}
		one, err := importer.Import(context.Background(), []string{onePath}, importer.Options{Format: f})
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, string(f)+"-many.jsonl")
		copies, lines, written, err := ct.writeCorpus(path, 3*copySize+1)
		if err != nil {
			t.Fatal(err)
		}
		st, _ := os.Stat(path)
		if copies != 4 || st.Size() != written || lines != 4*len(ct.lines) {
			t.Fatalf("%s: %d copies, %d lines, %d bytes written, %d on disk", f, copies, lines, written, st.Size())
		}
		sum, err := importer.Import(context.Background(), []string{path}, importer.Options{Format: f})
		if err != nil {
			t.Fatal(err)
		}
		if sum.SkippedTotal != 0 || one.Sessions == 0 || sum.Sessions != 4*one.Sessions || sum.Responses != 4*one.Responses ||
			sum.RepeatedResponses != 0 || int(sum.Lines) != lines {
			t.Fatalf("%s: one copy %d sessions %d responses; four copies %d sessions %d responses, %d repeated, %d lines of %d, skipped %v",
				f, one.Sessions, one.Responses, sum.Sessions, sum.Responses, sum.RepeatedResponses, sum.Lines, lines, sum.Skipped)
		}
		raw, err := rawPass(path, written, &ImportResult{})
		if err != nil || raw.LinesPerSec <= 0 || raw.PeakRSSBytes < 0 {
			t.Fatalf("%s raw: %+v %v", f, raw, err)
		}
		assertJSONLines(t, path)
	}
}

func assertJSONLines(t *testing.T, path string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 64<<20)
	for n := 1; sc.Scan(); n++ {
		if !json.Valid(sc.Bytes()) {
			t.Fatalf("%s:%d is not JSON", path, n)
		}
	}
}

// The whole benchmark on a tiny corpus, through a real node: every format
// measured, every session imported recorded and ended.
func TestRunImport(t *testing.T) {
	res, err := RunImport(context.Background(), ImportConfig{Size: 256 << 10, NodeSize: 32 << 10, ReportRuns: 1,
		RealisticSize: 5 << 20, Ccusage: filepath.Join(t.TempDir(), "no-ccusage")})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Formats) != len(apps.Formats) || res.Node == nil {
		t.Fatalf("result %+v", res)
	}
	for _, f := range res.Formats {
		if f.Bytes < 256<<10 || f.Skipped != 0 || f.Sessions == 0 || f.DryRun.Seconds <= 0 || f.Raw.Seconds <= 0 {
			t.Errorf("%s: %+v", f.Format, f)
		}
	}
	n := res.Node
	if n.Refused != 0 || n.Sessions == 0 || n.Recorded != int64(n.Sessions) {
		t.Fatalf("node: %+v", n)
	}
	// The reports answer for every session; a ccusage that cannot run
	// leaves its figures null and says why.
	r := n.Reports
	if r == nil || r.Calls != n.Recorded || r.Session.Rows != int(r.Calls) || r.Day.Rows < 1 || r.Runs != 1 ||
		r.CcusageReason == "" || r.Session.CcusageMs != nil || r.Day.Ratio != nil || r.CcusageFiles == 0 {
		t.Fatalf("reports: %+v", r)
	}
	// The realistic shape end to end: every session ended, a router call
	// each, the prefix copies counted once; each format's sessions under
	// its app, adding up to the whole.
	re := res.Realistic
	if re == nil || re.Node == nil || re.Sessions != re.Corpus.Sessions || re.Corpus.PrefixCopies == 0 ||
		re.Corpus.SubagentFiles == 0 || re.Node.Ended != int64(re.Sessions) || re.Node.Calls != int64(re.Sessions) ||
		re.Node.Refused != 0 || re.DryRun.Seconds <= 0 || re.Raw.Seconds <= 0 || re.EnvelopesPerMB <= 0 ||
		len(re.PerFormat) != 2 || re.PerFormat[1].Format != apps.FormatCodexRollout {
		t.Fatalf("realistic: %+v", re)
	}
	var sessions int
	for i, f := range re.PerFormat {
		n := f.Node
		if n == nil || f.Sessions != re.Corpus.PerFormat[i].Sessions || f.Bytes != re.Corpus.PerFormat[i].Bytes ||
			n.Ended != int64(f.Sessions) || n.Calls != int64(f.Sessions) || f.DryRun.Seconds <= 0 || n.Rate.Seconds <= 0 {
			t.Fatalf("realistic %s: %+v node %+v; corpus %+v", f.Format, f, n, re.Corpus.PerFormat[i])
		}
		sessions += f.Sessions
	}
	if sessions != re.Sessions {
		t.Fatalf("realistic: %d sessions by format, %d in all", sessions, re.Sessions)
	}
	if r.DayWholeDays.Rows != r.Day.Rows || r.SessionPage.Rows != min(100, int(r.Calls)) || r.SessionPage.CcusageMs != nil ||
		!strings.Contains(r.SessionPage.Query, "limit=100") {
		t.Fatalf("whole-day and paged reports: %+v %+v", r.DayWholeDays, r.SessionPage)
	}
}

// ccusage reads one file per session: the corpus is split the way Claude
// Code and Codex keep their files, every byte once.
func TestSplitSessions(t *testing.T) {
	wd, _ := os.Getwd()
	root, _ := moduleRoot(wd)
	dir := t.TempDir()
	for _, f := range []apps.Format{apps.FormatClaudeTranscript, apps.FormatCodexRollout} {
		ct, err := loadTemplate(filepath.Join(root, "..", "shared", "fixtures"), f)
		if err != nil {
			t.Fatal(err)
		}
		path := corpusName(dir, f, "split")
		_, _, written, err := ct.writeCorpus(path, 64<<10)
		if err != nil {
			t.Fatal(err)
		}
		sum, err := importer.Import(context.Background(), []string{path}, importer.Options{Format: f})
		if err != nil {
			t.Fatal(err)
		}
		out := filepath.Join(dir, string(f))
		files, size, err := splitSessions(path, out, f)
		if err != nil || size != written || files != sum.Sessions {
			t.Fatalf("%s: %d files of %d bytes (%v); want %d sessions of %d bytes", f, files, size, err, sum.Sessions, written)
		}
		got, _ := filepath.Glob(filepath.Join(out, "*.jsonl"))
		if len(got) != files {
			t.Fatalf("%s: %d files on disk, %d said", f, len(got), files)
		}
	}
}
