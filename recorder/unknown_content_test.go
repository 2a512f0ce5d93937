package recorder_test

import (
	"testing"

	"github.com/spinehq/spine/internal/spinetest"
	"github.com/spinehq/spine/streams"
)

// A file event whose content the source never carried is a step that says
// so (contentMissing, contentUnknown) with no Library file, no size and no
// pushed artifact; it is not an empty file.
func TestUnknownContentIsNotAnEmptyFile(t *testing.T) {
	h := running(t)
	h.Publish(spinetest.Start("s1"),
		spinetest.Event("s1", 1, &streams.Event{Action: "file_write", Path: "main.go", ContentUnknown: true}),
		spinetest.Event("s1", 2, &streams.Event{Action: "file_read", Path: "go.mod", ContentUnknown: true}),
		spinetest.Write("s1", 3, "empty.txt", ""),
		spinetest.End("s1", "done", "m", ""))
	h.WaitCaughtUp()

	page := steps(t, h, "s1")
	if len(page.Steps) != 3 {
		t.Fatalf("%d steps, want 3", len(page.Steps))
	}
	for _, st := range page.Steps[:2] {
		d := decodeMap(t, st.Detail)
		o := decodeMap(t, st.Observations[0].Body)
		_, digest := d["contentDigest"]
		_, size := d["size"]
		if d["contentMissing"] != true || d["contentUnknown"] != true || digest || size || o["contentUnknown"] != true {
			t.Fatalf("%s detail = %v, observation = %v", st.Action, d, o)
		}
	}
	// An empty file the source did report is still an empty file.
	if d := decodeMap(t, page.Steps[2].Detail); d["size"] != 0.0 || d["contentDigest"] == nil || d["contentUnknown"] != nil {
		t.Fatalf("empty write detail = %v", d)
	}
	if n := count(t, h, `SELECT count(*) FROM artifacts WHERE session_id = 's1' AND kind = 'pushed'`); n != 1 {
		t.Fatalf("%d pushed artifacts, want 1 (the empty file, not the unknown write)", n)
	}
	if n := count(t, h, `SELECT count(*) FROM artifacts WHERE session_id = 's1' AND name = 'main.go'`); n != 0 {
		t.Fatal("an unknown write pushed an artifact")
	}
}
