package bench

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spinehq/spine/importer"
)

// The realistic corpus: main files near a megabyte, subagents' transcripts
// where Claude Code keeps them, prefix copies of some sessions; importing
// it all counts each session once, with what its main file and subagent
// hold and nothing more (the copies add no session, response or envelope).
func TestRealisticCorpus(t *testing.T) {
	wd, _ := os.Getwd()
	root, ok := moduleRoot(wd)
	if !ok {
		t.Fatal("no go.mod")
	}
	rt, err := loadRealistic(filepath.Join(root, "..", "shared", "fixtures"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	c, err := rt.writeRealistic(dir, 8<<20)
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
