package node_test

import (
	"strings"
	"testing"

	"github.com/spinehq/spine/library"
)

// A file opened from a page is a download named as its artifact names it
// (else by its digest), never sniffed or rendered in spine's origin; one
// the caller may not read is the pages' 404 of a missing file, byte for
// byte.
func TestPageFileIsADownload(t *testing.T) {
	f := newFixture(t)
	alice, bob := f.token("acme", "alice"), f.token("acme", "bob")
	f.record(alice, finishedSession("s1", nil)...)
	prompt := library.Digest([]byte("fix the tests")) // the start's prompt: no artifact names it
	for digest, want := range map[string]string{library.Digest([]byte("package main\n")): `attachment; filename=main.go`,
		prompt: `attachment; filename="` + prompt + `"`} {
		code, h, body := f.pageGet("/ui/files/"+digest, alice)
		if code != 200 || body == "" {
			t.Fatalf("%s = %d %q", digest, code, body)
		}
		for k, v := range map[string]string{"Content-Disposition": want, "X-Content-Type-Options": "nosniff",
			"Content-Type": "application/octet-stream"} {
			if got := h.Get(k); got != v {
				t.Errorf("%s: %s = %q, want %q", digest, k, got, v)
			}
		}
		if csp := h.Get("Content-Security-Policy"); !strings.HasPrefix(csp, "sandbox") {
			t.Errorf("%s: Content-Security-Policy = %q, want sandbox", digest, csp)
		}
	}
	c1, _, theirs := f.pageGet("/ui/files/"+prompt, bob)
	c2, _, missing := f.pageGet("/ui/files/"+library.Digest([]byte("never stored")), bob)
	c3, _, bad := f.pageGet("/ui/files/blake3:zz", bob)
	if c1 != 404 || c2 != 404 || c3 != 404 || theirs != missing || bad != missing ||
		!strings.Contains(missing, "<html") || !strings.Contains(missing, "file not found") {
		t.Errorf("another member's file %d, a missing one %d, a bad digest %d; the same page: %v %v\n%s",
			c1, c2, c3, theirs == missing, bad == missing, missing)
	}
}
