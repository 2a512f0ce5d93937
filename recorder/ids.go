package recorder

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// derivedID is the id of an envelope spine publishes on its own, made from
// what the envelope says, so that publishing it again is a duplicate the
// log drops. It is a digest because a session id may already be as long as
// an id can be; domain keeps two kinds of envelope apart.
func derivedID(prefix, domain string, parts ...string) string {
	sum := sha256.Sum256([]byte(domain + "\x00" + strings.Join(parts, "\x00")))
	return prefix + hex.EncodeToString(sum[:16])
}
