package auth

import (
	"io"
	"time"
)

// SetClockAndRand makes s mint deterministic tokens: iat from now, ids from r.
func SetClockAndRand(s *Signer, now func() time.Time, r io.Reader) {
	s.now, s.rand = now, r
}
