package apps

import "testing"

// An apply_patch's added file's content, which the patch holds, is known;
// an updated file's, of which it holds only hunks, is unknown; a deleted
// file is no write.
func TestPatchEvents(t *testing.T) {
	evs := patchEvents("*** Begin Patch\n*** Add File: a.txt\n+one\n+two\n*** Update File: b.txt\n@@\n-x\n+y\n" +
		"*** Add File: empty.txt\n*** Delete File: c.txt\n*** End Patch")
	if len(evs) != 3 || evs[0].Content != "one\ntwo\n" || evs[0].ContentUnknown ||
		evs[1].Path != "b.txt" || !evs[1].ContentUnknown || evs[1].Content != "" ||
		evs[2].Path != "empty.txt" || evs[2].Content != "" || evs[2].ContentUnknown {
		t.Fatalf("patch events: %+v %+v %+v", evs[0], evs[1], evs[2])
	}
}
