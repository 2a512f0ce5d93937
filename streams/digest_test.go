package streams_test

import (
	"strings"
	"testing"

	"github.com/spinehq/spine/library"
	"github.com/spinehq/spine/streams"
)

// TestDigestShapeMatchesLibrary keeps the door's digest check in step
// with the library's parser, which streams cannot import.
func TestDigestShapeMatchesLibrary(t *testing.T) {
	for _, s := range []string{library.Digest([]byte("x")), "blake3:ab", "blake3:" + strings.Repeat("AB", 32),
		"sha256:" + strings.Repeat("ab", 32), "blake3:" + strings.Repeat("g", 64), "", "blake3:" + strings.Repeat("ab", 33)} {
		_, err := library.ParseDigest(s)
		if got := streams.ValidDigest(s); got != (err == nil) {
			t.Errorf("%q: door %v, library %v", s, got, err)
		}
	}
}
