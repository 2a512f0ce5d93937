package apps

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"strconv"

	"github.com/spinehq/spine/streams"
)

// SessionID is the spine session id of an app's session: the app's own id
// when it is already subject-safe, else its safe characters (others become
// '_'), cut short and suffixed with a hash of the original so that two app
// ids never share a spine id. The same app id always maps to the same id.
func SessionID(app, appSessionID string) string {
	if streams.ValidID(appSessionID) {
		return appSessionID
	}
	b := []byte(appSessionID)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			b[i] = '_'
		}
	}
	const keep = streams.MaxIDLen - 17
	if len(b) > keep {
		b = b[:keep]
	}
	return string(b) + "-" + hash(app, appSessionID)[:16]
}

// envelopeID is an envelope's id: a hash of the app, the session and the
// envelope's place in it, so a re-import publishes the same ids and
// JetStream's duplicate window stores a retry once.
func envelopeID(app, sessionID, kind string, seq int64) string {
	return "imp-" + hash(app, sessionID, kind, strconv.FormatInt(seq, 10))[:32]
}

func hash(parts ...string) string {
	h := sha256.New()
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))
}

// Key is what a translation remembers of a response, a line or an ended
// session: the first 8 bytes of a SHA-256 of its parts, so each costs 8
// bytes (plus the map's slot) however long its ids. Two different parts
// share a key with probability about n²/2⁶⁵ over n keys (3×10⁻⁶ for ten
// million); then the second is taken for the first: a line passed over as
// already imported, or a response counted as a repeat. That is the price of
// a 2 GB import under 300 MB; 16 bytes would make it 2⁶⁴ times smaller.
func Key(parts ...string) uint64 {
	var buf [256]byte
	b := buf[:0]
	for _, p := range parts {
		b = append(append(b, p...), 0)
	}
	sum := sha256.Sum256(b)
	return binary.BigEndian.Uint64(sum[:8])
}

// responseKey identifies one model response across files.
func responseKey(app, messageID, requestID string) uint64 {
	return Key("response", app, messageID, requestID)
}
