package node_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/spinehq/spine/internal/spinetest"
	"github.com/spinehq/spine/library"
	"github.com/spinehq/spine/streams"
	"github.com/spinehq/spine/trace"
)

// waitLibrary waits until the library projector has recorded n uploads.
func (f *fixture) waitUploads(n int) {
	f.t.Helper()
	deadline := time.Now().Add(spinetest.WaitTimeout)
	for {
		var got int
		f.n.Pool.QueryRow(context.Background(), `SELECT count(*) FROM artifacts WHERE kind = 'upload'`).Scan(&got)
		if got >= n {
			return
		}
		if time.Now().After(deadline) {
			f.t.Fatalf("%d uploads recorded, want %d", got, n)
		}
		select {
		case <-f.commits:
		case <-time.After(50 * time.Millisecond): // the library projector does not signal commits
		}
	}
}

func TestUploadTraceAndScoping(t *testing.T) {
	f := newFixture(t)
	alice, bob := f.token("acme", "alice"), f.token("acme", "bob")
	body := []byte("quarterly notes\n")

	// A smuggled producedBy is refused, whatever its spelling.
	for _, q := range []string{"?name=n.txt&producedBy=claude-code", "?name=n.txt&produced_by=x", "?name=n.txt&sessionId=s1", "?nope=1"} {
		code, resp := f.do("POST", "/v1/library/uploads"+q, alice, body)
		if code != 400 || !bytes.Contains(resp, []byte("bad_request")) {
			t.Errorf("upload %s = %d %s", q, code, resp)
		}
	}
	code, resp := f.do("POST", "/v1/library/uploads?name=notes.txt&contentType=text/plain", alice, body)
	if code != 201 {
		t.Fatalf("upload = %d %s", code, resp)
	}
	up := decode[map[string]any](t, resp)
	if up["digest"] != library.Digest(body) || up["producedBy"] != nil || up["size"] != float64(len(body)) {
		t.Fatalf("upload answer = %s", resp)
	}
	// The same bytes written by a session: one file, two artifacts.
	end := spinetest.End("s1", "done", "claude-opus-4-5", "high")
	f.do("POST", "/v1/ingest", alice, envelopes(t, spinetest.Start("s1"), spinetest.Text("s1", 1, "writing"),
		spinetest.Write("s1", 2, "notes.txt", string(body)), end))
	f.waitCaughtUp()
	f.waitUploads(1)

	code, resp = f.do("GET", "/v1/provenance/"+library.Digest(body), alice, nil)
	if code != 200 {
		t.Fatalf("trace = %d %s", code, resp)
	}
	var tr trace.File
	json.Unmarshal(resp, &tr)
	if len(tr.Artifacts) != 2 || !tr.Stored {
		t.Fatalf("trace = %s", resp)
	}
	var pushed, upload trace.Artifact
	for _, a := range tr.Artifacts {
		if a.Kind == "upload" {
			upload = a
		} else {
			pushed = a
		}
	}
	if upload.UploadedBy != "alice" || string(upload.ProducedBy) != "null" || upload.Session != nil {
		t.Fatalf("upload artifact = %+v", upload)
	}
	var by map[string]string
	json.Unmarshal(pushed.ProducedBy, &by)
	if by["app"] != "claude-code" || by["model"] != "claude-opus-4-5" || by["effort"] != "high" || by["sessionId"] != "s1" {
		t.Fatalf("producedBy = %s", pushed.ProducedBy)
	}
	if pushed.Session == nil || pushed.Session.Status != "done" || pushed.Step == nil || pushed.Step.Action != "file_write" ||
		pushed.Session.RunID != "run-s1" {
		t.Fatalf("pushed artifact = %s", resp)
	}
	if c := pushed.RouterCall; c == nil || c.Billing != "unknown" || c.ExecutionSurface != "cockpit-app:claude-code" || c.TotalCost != nil {
		t.Fatalf("router call in the trace = %s", resp)
	}
	// The transcript is an artifact with the same stamp.
	var sess map[string]any
	_, resp = f.do("GET", "/v1/sessions/s1", alice, nil)
	json.Unmarshal(resp, &sess)
	_, resp = f.do("GET", "/v1/provenance/"+sess["transcriptFileId"].(string), alice, nil)
	if !bytes.Contains(resp, []byte(`"kind":"transcript"`)) || !bytes.Contains(resp, []byte(`"model":"claude-opus-4-5"`)) {
		t.Fatalf("transcript trace = %s", resp)
	}
	// by artifact id
	if code, resp := f.do("GET", "/v1/provenance/"+up["artifactId"].(string), alice, nil); code != 200 || !bytes.Contains(resp, []byte(`"uploadedBy":"alice"`)) {
		t.Fatalf("trace by artifact id = %d %s", code, resp)
	}

	// Bob sees nothing of it: 404s identical to missing ones.
	missing := "blake3:" + strings.Repeat("0", 64)
	for _, pair := range [][2]string{
		{"/v1/provenance/" + library.Digest(body), "/v1/provenance/" + missing},
		{"/v1/provenance/" + up["artifactId"].(string), "/v1/provenance/upl-nope"},
		{"/v1/library/files/" + library.Digest(body), "/v1/library/files/" + missing},
	} {
		c1, theirs := f.do("GET", pair[0], bob, nil)
		c2, none := f.do("GET", pair[1], bob, nil)
		if c1 != 404 || c2 != 404 || !bytes.Equal(theirs, none) {
			t.Errorf("%s: %d %s vs %d %s", pair[0], c1, theirs, c2, none)
		}
	}
	// Alice reads the file, whole and by range.
	if code, got := f.do("GET", "/v1/library/files/"+library.Digest(body), alice, nil); code != 200 || !bytes.Equal(got, body) {
		t.Fatalf("file = %d %q", code, got)
	}
	req, _ := http.NewRequest("GET", f.base+"/v1/library/files/"+library.Digest(body), nil)
	req.Header.Set("Authorization", "Bearer "+alice)
	req.Header.Set("Range", "bytes=10-")
	r, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Body.Close()
	var part bytes.Buffer
	part.ReadFrom(r.Body)
	if r.StatusCode != 206 || part.String() != string(body[10:]) || r.Header.Get("Content-Range") != "bytes 10-15/16" {
		t.Fatalf("range = %d %q %s", r.StatusCode, part.String(), r.Header.Get("Content-Range"))
	}
}

func TestUploadEventsRefuseProducedBy(t *testing.T) {
	_, err := library.DecodeUpload([]byte(`{"v":1,"type":"library.upload","id":"upl-1","at":"2026-11-01T00:00:00Z",
		"digest":"` + library.Digest(nil) + `","size":0,"name":"x","contentType":"","owner":{"org":"a","member":"b"},
		"producedBy":{"app":"claude-code"}}`))
	if rej, ok := streams.AsRejection(err); !ok || !strings.Contains(rej.Detail, "producedBy") {
		t.Fatalf("smuggled producedBy: %v", err)
	}
}

// Naming another member's digest by reference does not let a member read it.
func TestDigestByReferenceGrantsNoRead(t *testing.T) {
	f := newFixture(t)
	alice, bob := f.token("acme", "alice"), f.token("acme", "bob")
	secret := []byte("alice's private notes")
	if code, resp := f.do("POST", "/v1/library/uploads?name=private.txt", alice, secret); code != 201 {
		t.Fatalf("upload = %d %s", code, resp)
	}
	size := int64(len(secret))
	start := spinetest.Start("b1")
	start.Owner = &streams.Owner{Org: "acme", Member: "bob"}
	end := spinetest.End("b1", "done", "", "")
	end.Artifacts = []streams.Artifact{{Name: "stolen", ContentDigest: library.Digest(secret), Size: &size}}
	f.do("POST", "/v1/ingest", bob, envelopes(t, start,
		spinetest.Event("b1", 1, &streams.Event{Action: "file_read", Path: "x", ContentDigest: library.Digest(secret), Size: &size}), end))
	f.waitCaughtUp()
	code, theirs := f.do("GET", "/v1/library/files/"+library.Digest(secret), bob, nil)
	_, none := f.do("GET", "/v1/library/files/blake3:"+strings.Repeat("1", 64), bob, nil)
	if code != 404 || !bytes.Equal(theirs, none) {
		t.Fatalf("bob read alice's file by naming its digest: %d %s", code, theirs)
	}
	if code, got := f.do("GET", "/v1/library/files/"+library.Digest(secret), alice, nil); code != 200 || !bytes.Equal(got, secret) {
		t.Fatalf("alice = %d", code)
	}
	// Range edge cases: suffix on an empty range, several ranges, past the end.
	req := func(rng string) int {
		r, _ := http.NewRequest("GET", f.base+"/v1/library/files/"+library.Digest(secret), nil)
		r.Header.Set("Authorization", "Bearer "+alice)
		r.Header.Set("Range", rng)
		resp, err := http.DefaultClient.Do(r)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for rng, want := range map[string]int{"bytes=-5": 206, "bytes=0-0,2-3": 200, "bytes=999-": 416, "bytes=5-2": 416} {
		if got := req(rng); got != want {
			t.Errorf("Range %s = %d, want %d", rng, got, want)
		}
	}
	// Upload parameters with control characters are a 400, not a 500.
	if code, _ := f.do("POST", "/v1/library/uploads?name=a&contentType=text/plain%09x", alice, []byte("x")); code != 400 {
		t.Errorf("control character in contentType = %d", code)
	}
}
