package secrets

import (
	"strings"
	"testing"
)

// pathological are single lines that wake the prefilter or a rule every
// few bytes: before windows were bounded and merged, each hit searched
// back to the start of the line, so a MiB took minutes.
var pathological = []string{"sk-", "a://b:c", "authorization:", "config.api_key = value_here_x; "}

// TestRedactionIsLinear redacts each shape at 128 KiB and at 1 MiB and
// counts the bytes rules and line searches read: eight times the text
// may cost at most ten times the work.
func TestRedactionIsLinear(t *testing.T) {
	for _, unit := range pathological {
		for _, tail := range []string{"", "é"} {
			small, big := scannedFor(t, unit, 128<<10, tail), scannedFor(t, unit, 1<<20, tail)
			if big > 10*small {
				t.Errorf("%q%s: 128 KiB read %d bytes, 1 MiB read %d: not linear", unit, tail, small, big)
			}
		}
	}
}

func scannedFor(t *testing.T, unit string, size int, tail string) int64 {
	t.Helper()
	r := Default()
	s := strings.Repeat(unit, size/len(unit)) + tail
	before := r.scanned.Load()
	r.String(s)
	return r.scanned.Load() - before
}
