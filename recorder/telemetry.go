package recorder

import (
	"slices"

	"github.com/spinehq/spine/spine"
	"github.com/spinehq/spine/streams"
)

// A session.telemetry is one event of an app's own telemetry
// (docs/telemetry.md#design-what-the-doors-become). The first for a session
// id nobody holds creates the session (origin telemetry); a later start of
// its owner makes it that door's (merge.go). Requests go to the session's
// ledger (ledger.go), whatever its origin; the rest shapes only a telemetry
// session: a tool's post is a step, an end ends it. In another door's
// session that door records the steps and the end, and the telemetry is
// only activity. A telemetry session the idle sweeper ended was only quiet
// (its user away, a long command): telemetry other than a request runs it
// again, as a start does, and its next end is its end.

// telemetry applies one session.telemetry.
func (b *batch) telemetry(m streams.Message, e *streams.Envelope) error {
	s, err := b.telemetrySession(m, e)
	if err != nil {
		return err
	}
	if s.Origin == OriginTelemetry && e.Billing != "" && e.Billing != s.Billing {
		s.Billing, s.dirty = e.Billing, true // the last signal, as accounting's row takes it
	}
	t := e.Telemetry
	switch t.Kind {
	case streams.TelemetryRequest:
		b.request(s, e)
	case streams.TelemetryTool:
		return b.tool(s, e)
	case streams.TelemetryPrompt:
		if s.PromptDigest == "" && t.PromptDigest != "" {
			s.PromptDigest, s.described = t.PromptDigest, true
		}
	case streams.TelemetryEnd:
		b.telemetryEnd(s, e)
	}
	return nil
}

// telemetrySession is the session e names, created when no one holds its
// id: e's owner claims it as a start's would. Another owner's id is
// session_exists (for an id held, the dead letter is e's owner's).
func (b *batch) telemetrySession(m streams.Message, e *streams.Envelope) (*Session, error) {
	s := b.sessions[e.SessionID]
	if err := checkCaller(m, *e.Owner); err != nil {
		return nil, err
	}
	if held, ok := b.claims[e.SessionID]; (s == nil && ok && held != *e.Owner) || (s != nil && s.owner() != *e.Owner) {
		return nil, streams.Reject(streams.ReasonSessionExists, "session id %s is taken by another owner", e.SessionID)
	}
	if s == nil {
		return b.create(m, e), nil
	}
	s, err := b.session(m, e)
	if err != nil {
		return nil, err
	}
	if s.swept && e.Telemetry.Kind != streams.TelemetryRequest {
		b.reopen(s)
	}
	b.active(s, m, e)
	return s, nil
}

// create makes the session of a telemetry whose id nobody holds: kind
// run, running from e's time.
func (b *batch) create(m streams.Message, e *streams.Envelope) *Session {
	s := &Session{ID: e.SessionID, Org: e.Owner.Org, Member: e.Owner.Member, App: e.App, Kind: "run",
		AppSessionRef: e.AppSessionRef, WorkerID: e.WorkerID, Billing: e.Billing, Status: StatusRunning,
		SessionRunID: RunID(e.SessionID), Complete: true, Partition: streams.Partition(e.SessionID, b.r.parts),
		StartedAt: e.At, UpdatedAt: e.At, received: storedAt(m), isNew: true, Origin: OriginTelemetry}
	b.sessions[s.ID] = s
	b.work.AddRun(spine.Run{ID: s.SessionRunID, Kind: spine.KindSessionRecording, Org: s.Org,
		Member: s.Member, SessionID: s.ID, CreatedAt: e.At})
	return s
}

// active notes that a running session was heard from: its idle time starts
// over, and its updated_at is the latest event's.
func (b *batch) active(s *Session, m streams.Message, e *streams.Envelope) {
	if s.Ended() {
		return
	}
	s.heard(m)
	if e.At.After(s.UpdatedAt) {
		s.UpdatedAt = e.At
	}
	s.dirty = true
}

// tool records a telemetry session's finished tool use as one step and
// its observation, keyed by the tool use's id: the same use told twice (a
// hook and an OTLP export, a re-sent export) is one step. A tool about to
// run (phase pre) is only activity.
func (b *batch) tool(s *Session, e *streams.Envelope) error {
	t := e.Telemetry
	if t.Phase != streams.PhasePost || s.Origin != OriginTelemetry || s.Ended() {
		return nil
	}
	if b.calls[s.SessionRunID+"\x00"+t.ToolUseID] != "" {
		return errDuplicate
	}
	action, detail, result := "tool", map[string]any{}, map[string]any{}
	if ev := t.Event; ev != nil {
		if ev.Action == "mcp_call" && slices.Contains(protocolTools, ev.Tool) {
			return nil // protocol, not work
		}
		action = ev.Action
		detail, result = b.describe(ev)
	}
	detail["tool"] = t.Tool
	putSet(detail, "success", t.Success)
	putSet(detail, "durationMs", t.DurationMs)
	if t.ErrorType != "" {
		detail["errorType"] = t.ErrorType
	}
	putSet(result, "success", t.Success)
	id := b.addStep(s, action, spine.SourceTelemetry, nil, t.ToolUseID, detail, result, e.At)
	if supersedable(spine.SourceTelemetry, action) {
		b.supersedable[s.SessionRunID+"\x00"+t.ToolUseID] = true
	}
	if action == "file_write" {
		b.pushed(s, id, detail, e.At)
	}
	return nil
}

// putSet puts *v in m under k when v is set.
func putSet[T any](m map[string]any, k string, v *T) {
	if v != nil {
		m[k] = *v
	}
}

// telemetryEnd ends a running telemetry session done: the app said so (a
// hook's SessionEnd). Its usage, cost, model and effort are its ledger's
// (flush). Another door's session waits for that door's end.
func (b *batch) telemetryEnd(s *Session, e *streams.Envelope) {
	if s.Origin != OriginTelemetry || s.Ended() {
		return
	}
	s.Status, s.ExitCode, s.Error = "done", nil, ""
	b.finish(s, e.At)
}

// owner is who holds the session.
func (s *Session) owner() streams.Owner { return streams.Owner{Org: s.Org, Member: s.Member} }

// checkCaller refuses an envelope naming an owner other than the verified
// caller who sent it through HTTP (a trusted producer sends no caller).
func checkCaller(m streams.Message, o streams.Owner) error {
	if org := m.Header.Get(streams.HeaderOrg); org != "" && (org != o.Org || m.Header.Get(streams.HeaderMember) != o.Member) {
		return streams.Reject(streams.ReasonOwnerMismatch, "owner differs from the verified caller")
	}
	return nil
}
