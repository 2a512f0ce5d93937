package telemetry

import (
	"fmt"
	"strconv"

	"github.com/spinehq/spine/apps"
	"github.com/spinehq/spine/streams"
)

// envelopeID is "tel-" and a hash of the app, the session, the kind, the
// source and the event's key: what the two doors say of one tool use are
// two envelopes (both reach the log; the recorder makes one step of them),
// a re-sent one is the same envelope.
func envelopeID(app, session, kind, source, key string) string {
	return fmt.Sprintf("tel-%016x", apps.Key("telemetry", app, session, kind, source, key))
}

// toolUseID is the app's id of a tool use as a spine id: itself when it
// is one (Claude Code's toolu_…, Codex's call_…), else its safe characters
// and a hash of it, always the same for the same id.
func toolUseID(use string) string { return apps.SessionID("tool", use) }

// recordKey tells one record from the others of its session where the
// app names none: its event.timestamp and event.sequence (Claude Code
// numbers its events), else, for Codex, which numbers none, the
// observedTimeUnixNano its SDK stamped, which a re-sent export repeats.
func recordKey(e Event) string {
	at, _ := e.Attrs.Str("event.timestamp")
	if seq, ok := e.Attrs.Int("event.sequence"); ok {
		return at + ":" + strconv.FormatInt(seq, 10)
	}
	return at + ":" + strconv.FormatUint(e.Observed, 10)
}

// requestKey is the attribute key as a request key when it is one, else
// fallback (a request that names none), either made safe (hashKey).
func requestKey(a Attrs, key, fallback string) string {
	id, _ := a.Str(key)
	if id == "" {
		id = fallback
	}
	if !streams.ValidKey(id) {
		return hashKey("key", id)
	}
	return id
}

// hashKey stands in for a key with characters a key may not hold.
func hashKey(prefix, s string) string {
	return fmt.Sprintf("%s:h%016x", prefix, apps.Key("telemetry-key", s))
}
