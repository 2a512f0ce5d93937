package streams

import (
	"fmt"
	"time"
)

// Field bounds: the most bytes of UTF-8 each string field may hold, for
// every envelope and for every runner and remote-session message (package
// desktop validates with the same table). A field over its bound is
// refused with ReasonFieldTooLong, naming the field and the bound, never
// the value: HTTP answers 400 field_too_long, a projector dead-letters it.
//
// Short names are bounded far below PostgreSQL's btree row limit (2,704
// bytes), so no key built from them can stop a projector; free text gets
// room for the real thing (a 1 MiB tool output, a 4,096-byte path).
const (
	// MaxIDLen bounds every id (envelope, session, plan, task, step, run,
	// worker, call, runner, receipt) and an owner's org and member. Ids
	// are also subject tokens; over it is invalid_id, as ever.
	MaxIDLen = 128
	// MaxNameLen bounds short names: model and effort as the app reported
	// them, an MCP server and tool, appSessionRef (the app's own session
	// id), a runner's machine, apps, capabilities and targets, a task's
	// title and localSessionId, a runner event's sessionId and status.
	MaxNameLen = 256
	// MaxDigestLen bounds a contentDigest ("blake3:" and 64 hex digits
	// fit many times over); digests are indexed.
	MaxDigestLen = 128
	// MaxPathLen bounds a file path, a workspace and an artifact's name:
	// Linux's PATH_MAX, so every real path fits.
	MaxPathLen = 4096
	// MaxReasonLen bounds a control's or a disconnect's reason and a task
	// transition's reason: a sentence, not a log.
	MaxReasonLen = 4 << 10
	// MaxURLLen bounds a fetch event's url: eight times the 8 KiB most
	// servers accept, so no real URL is refused.
	MaxURLLen = 64 << 10
	// MaxErrorLen bounds an error text: a session end's, an mcp.call's, a
	// runner event's and a completion's. Room for a stack trace.
	MaxErrorLen = 64 << 10
	// MaxInstructionsLen bounds a remote session's instructions and a
	// send's prompt, and MaxEventTextLen a runner event's text.
	MaxInstructionsLen = 256 << 10
	MaxEventTextLen    = 256 << 10
	// MaxCommandLen bounds a command event's command: a command line with
	// a here-document of a whole file still fits.
	MaxCommandLen = 1 << 20
	// MaxChunkText bounds the text of one stdout/stderr chunk; producers
	// split longer text into chunks.
	MaxChunkText = 1 << 20
	// MaxPromptLen bounds a session.start's prompt.
	MaxPromptLen = 1 << 20
	// MaxUsageRawLen bounds usage.raw (the app's own report, verbatim)
	// and a runner usage event's usage: the importer keeps up to 256 of
	// an app's reports there, each well under 4 KiB.
	MaxUsageRawLen = 1 << 20
	// MaxArgumentsLen bounds an mcp_call event's arguments: a tool's
	// input, as large as a command.
	MaxArgumentsLen = 1 << 20
	// MaxContentLen bounds an event's output and content and an
	// artifact's content: only the envelope itself (MaxEnvelopeBytes), so
	// a real 1 MiB tool output or file goes through.
	MaxContentLen = MaxEnvelopeBytes
)

// Bounds on numbers and times a producer reports.
const (
	// MaxSeq bounds a chunk's seq and a runner event's seq. A seq near
	// 2^63 would make every later chunk or event of its session or task a
	// duplicate; no session reaches 2^31 chunks (24 days at 1,000 a second).
	MaxSeq = 1<<31 - 1
	// MaxFileSize bounds an event's and an artifact's size: 1 TiB.
	MaxFileSize = 1 << 40
)

// The range of every producer time (at, deliverBy). The earliest is the
// Unix epoch: a clock reading is never earlier, and anything before it
// (0000-01-01, stored by PostgreSQL as 1 BC) is a zero value or a typo,
// while imported history, however old, is later. The latest is the last
// instant RFC 3339's four-digit year can write. Fixed bounds, not "now
// plus a margin": Decode must answer the same on a rebuild years later.
var (
	MinTime = time.Date(1970, 1, 1, 0, 0, 0, 0, time.UTC)
	MaxTime = time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC)
)

// CheckLen refuses v when it is over limit bytes, naming field and the
// limit but never the value.
func CheckLen(field, v string, limit int) error {
	if len(v) > limit {
		return Reject(ReasonFieldTooLong, "%s is %d bytes, limit %d", field, len(v), limit)
	}
	return nil
}

// CheckTime refuses t outside MinTime..MaxTime.
func CheckTime(field string, t time.Time) error {
	if t.Before(MinTime) || t.After(MaxTime) {
		return Reject(ReasonInvalidField, "%s must be between %s and %s", field,
			MinTime.Format(time.RFC3339), MaxTime.Format(time.RFC3339))
	}
	return nil
}

// CheckSeq refuses a seq outside 1..MaxSeq.
func CheckSeq(field string, seq int64) error {
	if seq < 1 || seq > MaxSeq {
		return Reject(ReasonInvalidField, "%s must be 1 to %d, got %d", field, int64(MaxSeq), seq)
	}
	return nil
}

// CheckSize refuses a size outside 0..MaxFileSize.
func CheckSize(field string, size *int64) error {
	if size != nil && (*size < 0 || *size > MaxFileSize) {
		return Reject(ReasonInvalidField, "%s must be 0 to %d bytes", field, int64(MaxFileSize))
	}
	return nil
}

// bound is one string field and the limit it is held to.
type bound struct {
	field string
	v     string
	limit int
}

// checkBounds holds every string field of the envelope to its bound. Ids
// are checked by the type's rules (invalid_id); closed sets by theirs.
func (e *Envelope) checkBounds() error {
	for _, b := range [...]bound{
		{"appSessionRef", e.AppSessionRef, MaxNameLen}, {"workspace", e.Workspace, MaxPathLen},
		{"prompt", e.Prompt, MaxPromptLen}, {"text", e.Text, MaxChunkText},
		{"reason", e.Reason, MaxReasonLen}, {"error", e.Error, MaxErrorLen},
		{"model", e.Model, MaxNameLen}, {"effort", e.Effort, MaxNameLen},
		{"server", e.Server, MaxNameLen}, {"tool", e.Tool, MaxNameLen},
	} {
		if err := CheckLen(b.field, b.v, b.limit); err != nil {
			return err
		}
	}
	if e.Event != nil {
		if err := e.Event.checkBounds(); err != nil {
			return err
		}
	}
	if e.Usage != nil && len(e.Usage.Raw) > MaxUsageRawLen {
		return Reject(ReasonFieldTooLong, "usage.raw is %d bytes, limit %d", len(e.Usage.Raw), MaxUsageRawLen)
	}
	for i := range e.Artifacts {
		if err := e.Artifacts[i].checkBounds(i); err != nil {
			return err
		}
	}
	if e.Telemetry != nil {
		return e.Telemetry.checkBounds()
	}
	return nil
}

func (ev *Event) checkBounds() error {
	for _, b := range [...]bound{
		{"event.command", ev.Command, MaxCommandLen}, {"event.output", ev.Output, MaxContentLen},
		{"event.path", ev.Path, MaxPathLen}, {"event.content", ev.Content, MaxContentLen},
		{"event.contentDigest", ev.ContentDigest, MaxDigestLen}, {"event.url", ev.URL, MaxURLLen},
		{"event.server", ev.Server, MaxNameLen}, {"event.tool", ev.Tool, MaxNameLen},
		{"event.callId", ev.CallID, MaxIDLen},
	} {
		if err := CheckLen(b.field, b.v, b.limit); err != nil {
			return err
		}
	}
	if len(ev.Arguments) > MaxArgumentsLen {
		return Reject(ReasonFieldTooLong, "event.arguments is %d bytes, limit %d", len(ev.Arguments), MaxArgumentsLen)
	}
	return nil
}

func (a *Artifact) checkBounds(i int) error {
	for _, b := range [...]bound{
		{"name", a.Name, MaxPathLen}, {"content", a.Content, MaxContentLen}, {"contentDigest", a.ContentDigest, MaxDigestLen},
	} {
		if err := CheckLen(fmt.Sprintf("artifacts[%d].%s", i, b.field), b.v, b.limit); err != nil {
			return err
		}
	}
	return nil
}
