package node_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/spinehq/spine/internal/spinetest"
	"github.com/spinehq/spine/library"
	"github.com/spinehq/spine/streams"
	"github.com/spinehq/spine/trace"
)

// provenanceFixture: alice uploads notes.txt, and her session s1 (step-3
// of plan run plan-run-42) writes the same bytes, reporting usage and a
// cost; her s2 names by reference a file only bob sent, reporting nothing.
func provenanceFixture(t *testing.T) (f *fixture, notes, bobs string) {
	f = newFixture(t)
	alice, bob := f.token("acme", "alice"), f.token("acme", "bob")
	body, secret := "quarterly notes\n", "bob's own notes\n"
	if code, resp := f.do("POST", "/v1/library/uploads?name=notes.txt", alice, []byte(body)); code != 201 {
		t.Fatalf("upload = %d %s", code, resp)
	}
	if code, resp := f.do("POST", "/v1/library/uploads?name=mine.txt", bob, []byte(secret)); code != 201 {
		t.Fatalf("upload = %d %s", code, resp)
	}
	s1 := spinetest.Start("s1")
	s1.PlanID, s1.ParentRunID, s1.StepID = "plan-7", "plan-run-42", "step-3"
	end := usageEnd("s1")
	end.Model, end.Effort = "claude-opus-4-5", "high"
	size := int64(len(secret))
	s2end := spinetest.End("s2", "done", "", "")
	s2end.Artifacts = []streams.Artifact{{Name: "theirs.txt", ContentDigest: library.Digest([]byte(secret)), Size: &size}}
	f.ingest(alice, s1, spinetest.Text("s1", 1, "writing"), spinetest.Write("s1", 2, "notes.txt", body), end,
		spinetest.Start("s2"), s2end)
	f.waitCaughtUp()
	f.waitUploads(2)
	return f, library.Digest([]byte(body)), library.Digest([]byte(secret))
}

// The provenance page answers what GET /v1/provenance/{id} does: a file's
// every artifact with its producer (app, model, effort, session) or "a
// person uploaded it", its step and router-call row, the file's bytes
// linked only for a reader; a session followed down; another member's
// file, artifact or session is the 404 page of a missing one.
func TestProvenancePage(t *testing.T) {
	f, notes, bobs := provenanceFixture(t)
	alice, bob := f.token("acme", "alice"), f.token("acme", "bob")

	form := f.page(200, "/ui/provenance", alice)
	if !strings.Contains(form, `<label for="trace-id">`) || !strings.Contains(form, `id="trace-id" name="id"`) {
		t.Fatalf("the search form:\n%s", form)
	}
	page := f.page(200, "/ui/provenance?id="+notes, alice) // the form's answer goes to /ui/provenance/{id}
	for _, want := range []string{
		`class="producer">a person uploaded it: alice`,
		`class="producer">claude-code, model claude-opus-4-5, effort high, session <a href="/ui/sessions/s1">s1</a>`,
		`(file_write) at`, `href="/ui/plans/plan-run-42">plan-run-42</a>`, "for step step-3",
		`data-call="input">100</dd>`, `data-call="cache-read">0</dd>`, `data-call="output">20</dd>`,
		`data-call="total">120</dd>`, "$0.25 (as reported)",
		`href="/ui/files/` + notes + `"`, "2 of your artifacts",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the trace of notes lacks %q", want)
		}
	}
	ref := f.page(200, "/ui/provenance/"+bobs, alice)
	if strings.Contains(ref, "/ui/files/") || !strings.Contains(ref, "stored, not yours to read") ||
		!strings.Contains(ref, `data-call="cost"><span class="silent">not reported</span>`) || !strings.Contains(ref, "model not reported") {
		t.Errorf("the trace of a digest alice only named:\n%s", ref)
	}

	api := decode[trace.Session](t, f.mustDo(200, "GET", "/v1/provenance/s1", alice, nil))
	sess := f.page(200, "/ui/provenance/s1", alice)
	if !strings.Contains(sess, fmt.Sprintf(`id="recorded">%d steps, %d observations`, api.Steps, api.Observations)) ||
		!strings.Contains(sess, `data-artifact="art-s1-transcript"`) || !strings.Contains(sess, "$0.25 (as reported)") ||
		!strings.Contains(sess, "step step-3 of plan run") || len(api.Artifacts) != strings.Count(sess, "<li data-artifact=") {
		t.Errorf("the trace of s1 (%+v):\n%s", api, sess)
	}

	art := decode[trace.File](t, f.mustDo(200, "GET", "/v1/provenance/"+notes, alice, nil)).Artifacts[0].ID
	missing := f.page(404, "/ui/provenance/blake3:"+strings.Repeat("0", 64), bob)
	for _, id := range []string{notes, art, "s1", "nope", "plan-run-42"} {
		if theirs := f.page(404, "/ui/provenance/"+id, bob); theirs != missing {
			t.Errorf("bob's trace of alice's %s:\n%s\nmissing:\n%s", id, theirs, missing)
		}
	}
	if got := f.page(200, "/ui/provenance/"+bobs, bob); !strings.Contains(got, "a person uploaded it: bob") || strings.Contains(got, "alice") {
		t.Errorf("bob's trace of his own file:\n%s", got)
	}
}
