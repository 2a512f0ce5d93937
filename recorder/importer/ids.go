package importer

import (
	"crypto/sha256"
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

// responseKey identifies one model response across files.
func responseKey(app, messageID, requestID string) [16]byte {
	sum := sha256.Sum256([]byte(app + "\x00" + messageID + "\x00" + requestID))
	var k [16]byte
	copy(k[:], sum[:16])
	return k
}
