package recorder_test

import (
	"testing"

	"github.com/spinehq/spine/internal/spinetest"
	"github.com/spinehq/spine/streams"
)

// A call whose result never came (noResult) is a step with what was asked
// and an observation that says so: no exit code, output, status or file
// stands in for the result nobody reported.
func TestCallsWithoutResult(t *testing.T) {
	h := running(t)
	h.Publish(spinetest.Start("s1"),
		spinetest.Event("s1", 1, &streams.Event{Action: "command", Command: "sleep 100", NoResult: true}),
		spinetest.Event("s1", 2, &streams.Event{Action: "file_read", Path: "a.txt", ContentUnknown: true, NoResult: true}),
		spinetest.Event("s1", 3, &streams.Event{Action: "fetch", URL: "https://go.dev", NoResult: true}),
		spinetest.End("s1", "done", "m", ""))
	h.WaitCaughtUp()

	page := steps(t, h, "s1")
	if len(page.Steps) != 3 {
		t.Fatalf("%d steps, want 3", len(page.Steps))
	}
	for _, st := range page.Steps {
		o := decodeMap(t, st.Observations[0].Body)
		if o["noResult"] != true {
			t.Fatalf("%s observation = %v", st.Action, o)
		}
		for _, k := range []string{"exitCode", "output", "status", "size"} {
			if _, ok := o[k]; ok {
				t.Fatalf("%s without a result has %s: %v", st.Action, k, o)
			}
		}
	}
	if d := decodeMap(t, page.Steps[1].Detail); d["contentUnknown"] != true || d["size"] != nil {
		t.Fatalf("file_read without a result: detail = %v", d)
	}
}
