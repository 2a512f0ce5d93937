package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spinehq/spine/importer"
	"github.com/spinehq/spine/internal/checksum"
	"github.com/spinehq/spine/internal/config"
	"github.com/spinehq/spine/node"
)

// sharedFixtures is ../shared/fixtures beside the repository root.
func sharedFixtures(t *testing.T) string {
	dir, _ := os.Getwd()
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return filepath.Join(dir, "..", "shared", "fixtures")
		}
		if filepath.Dir(dir) == dir {
			t.Fatal("no go.mod above the test")
		}
		dir = filepath.Dir(dir)
	}
}

// Real files through a real node: sessions, transcripts and steps read
// back; a second import changes no projection (same checksum) and
// publishes nothing.
func TestImportEndToEnd(t *testing.T) {
	n, caughtUp := testNode(t)
	sums := func() map[string]string {
		c, err := checksum.Compute(context.Background(), n.Pool)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	imp := func() importer.Summary {
		out, err := capture(t, "import", "--json", sharedFixtures(t))
		var sum importer.Summary
		if err != nil || json.Unmarshal([]byte(out), &sum) != nil {
			t.Fatalf("import: %v\n%s", err, out)
		}
		caughtUp()
		return sum
	}

	first := imp()
	if first.Sessions != 18 || first.Responses != 57 || len(first.Refused) != 0 || first.SkippedTotal != 0 {
		t.Fatalf("first import: %+v", first)
	}
	out, err := capture(t, "read", "session", "8122657c-fe54-4dc9-89a3-20049e8a84f7", "--json")
	var sess map[string]any
	if err != nil || json.Unmarshal([]byte(out), &sess) != nil {
		t.Fatalf("read session: %v\n%s", err, out)
	}
	usage, _ := sess["usage"].(map[string]any)
	if sess["status"] != "done" || sess["model"] != "claude-sonnet-4-5-20250929" || sess["member"] != "dev" ||
		usage["outputTokens"] != 1508.0 || usage["cacheReadTokens"] != 148958.0 || sess["billing"] != "" || sess["totalCost"] != nil {
		t.Fatalf("crud session: %v", sess)
	}
	out, err = capture(t, "read", "transcript", "40e7b02d-c0f9-4876-9010-f514d4eb0603")
	if err != nil || !strings.Contains(out, "Here are the files") && !strings.Contains(out, "ls") {
		t.Fatalf("transcript: %v\n%s", err, out)
	}
	out, err = capture(t, "read", "steps", "019a2d7a-6455-7170-a661-c6d8b94c630a")
	if err != nil || !strings.Contains(out, "bash -lc ls") {
		t.Fatalf("codex steps: %v\n%s", err, out)
	}
	before := sums()

	again := imp()
	if again.Sessions != 0 || again.AlreadyRecorded != 18 || again.Envelopes != 0 {
		t.Fatalf("re-import: %+v", again)
	}
	if d := checksum.Diff(before, sums()); len(d) != 0 {
		t.Fatalf("re-import changed %v", d)
	}
}

// An import over its org's quota is slowed, not failed: spine answers 429
// with Retry-After, the import waits as asked and sends the batch again,
// and every session arrives.
func TestImportOverQuotaWaitsAndFinishes(t *testing.T) {
	n, caughtUp := testNodeWith(t, func(c *config.Config) { c.OrgEnvelopesPerSec = 20 })
	out, err := capture(t, "import", "--json", "--batch", "20", sharedFixtures(t))
	var sum importer.Summary
	if err != nil || json.Unmarshal([]byte(out), &sum) != nil {
		t.Fatalf("import: %v\n%s", err, out)
	}
	caughtUp()
	if sum.Sessions != 18 || len(sum.Refused) != 0 {
		t.Fatalf("import over quota: %+v", sum)
	}
	if refused := limited(t, n, "quota_exceeded"); refused == 0 {
		t.Fatalf("the import was never over quota (%d envelopes): the test proves nothing", sum.Envelopes)
	}
}

// limited reads spine_http_limited_total{code} from the node's registry.
func limited(t *testing.T, n *node.Node, code string) float64 {
	t.Helper()
	mfs, err := n.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			if mf.GetName() == "spine_http_limited_total" && m.GetLabel()[0].GetValue() == code {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}
