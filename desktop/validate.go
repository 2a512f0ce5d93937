package desktop

import (
	"cmp"
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/spinehq/spine/streams"
)

// Validate checks m against the rules of its type. Every string is held to
// its bound in streams' table of field bounds (field_too_long over it).
func (m *Message) Validate() error {
	switch {
	case m.V != 1:
		return streams.Reject(streams.ReasonUnknownVersion, "v %d", m.V)
	case !knownTypes[m.Type]:
		return streams.Reject(streams.ReasonUnknownType, "type %q", m.Type)
	case !streams.ValidID(m.ID):
		return streams.Reject(streams.ReasonInvalidID, "id")
	case m.At.IsZero():
		return streams.Reject(streams.ReasonMissingField, "at is required")
	case m.Org == "" || m.Member == "" || len(m.Org) > streams.MaxIDLen || len(m.Member) > streams.MaxIDLen:
		return streams.Reject(streams.ReasonMissingField, "org and member are required")
	}
	if err := streams.CheckTime("at", m.At); err != nil {
		return err
	}
	if err := streams.CheckLen("reason", m.Reason, streams.MaxReasonLen); err != nil {
		return err
	}
	if m.Type == TypeRegistered || m.Type == TypeSeen {
		if !streams.ValidID(m.RunnerID) {
			return streams.Reject(streams.ReasonInvalidID, "runnerId")
		}
		if m.Type == TypeRegistered {
			return validateInventory(m.Runner)
		}
		return nil
	}
	if !streams.ValidID(m.TaskID) {
		return streams.Reject(streams.ReasonInvalidID, "taskId")
	}
	return m.validateTask()
}

func (m *Message) validateTask() error {
	switch m.Type {
	case TypeQueued:
		return validateSpec(m.Task)
	case TypeClaimed:
		if !streams.ValidID(m.RunnerID) {
			return streams.Reject(streams.ReasonInvalidID, "runnerId")
		}
	case TypeHeartbeat, TypeInterrupted:
		if m.Fence == 0 {
			return streams.Reject(streams.ReasonMissingField, "fence is required")
		}
	case TypeEvents:
		if m.Fence == 0 {
			return streams.Reject(streams.ReasonMissingField, "fence is required")
		}
		return ValidateEvents(m.Events)
	case TypeSessionLinked:
		switch {
		case m.Fence == 0:
			return streams.Reject(streams.ReasonMissingField, "fence is required")
		case !streams.ValidID(m.RunnerID):
			return streams.Reject(streams.ReasonInvalidID, "runnerId")
		case !streams.ValidID(m.RecordedSession):
			return streams.Reject(streams.ReasonInvalidID, "recordedSession")
		}
	case TypeCompleted:
		if m.Fence == 0 || m.Complete == nil {
			return streams.Reject(streams.ReasonMissingField, "fence and complete are required")
		}
		return validateCompletion(m.Complete)
	}
	return nil
}

func validateSpec(t *TaskSpec) error {
	switch {
	case t == nil:
		return streams.Reject(streams.ReasonMissingField, "task is required")
	case t.Kind != KindRemoteSession:
		return streams.Reject(streams.ReasonInvalidField, "kind %q", t.Kind)
	case t.Target != TargetDesktop:
		return streams.Reject(streams.ReasonInvalidField, "target %q", t.Target)
	case !streams.ValidID(t.RemoteSessionID):
		return streams.Reject(streams.ReasonInvalidID, "remoteSessionId")
	case t.RunnerID != "" && !streams.ValidID(t.RunnerID):
		return streams.Reject(streams.ReasonInvalidID, "runnerId")
	case t.Instructions == "":
		return streams.Reject(streams.ReasonMissingField, "instructions are required")
	case !validApp(t.App):
		return streams.Reject(streams.ReasonInvalidField, "app %q (want claude-code or codex)", t.App)
	case t.LocalSessionID != "" && !ValidLocalSessionID(t.LocalSessionID):
		return streams.Reject(streams.ReasonInvalidID, "localSessionId is not an app's session id (a UUID)")
	}
	if t.DeliverBy != nil {
		if err := streams.CheckTime("deliverBy", *t.DeliverBy); err != nil {
			return err
		}
	}
	// cmp.Or: the first field over its bound.
	return cmp.Or(streams.CheckLen("instructions", t.Instructions, streams.MaxInstructionsLen),
		streams.CheckLen("title", t.Title, streams.MaxNameLen),
		streams.CheckLen("workspace", t.Workspace, streams.MaxPathLen))
}

// validApp: a task names no app, or one spine runs.
func validApp(app string) bool { return app == "" || app == AppClaudeCode || app == AppCodex }

// localSessionRe is an app's own session id as both apps make them: a
// UUID (Claude Code's session id, Codex's thread id).
var localSessionRe = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)

// ValidLocalSessionID says whether id is an app's own session id (a UUID).
// A follow-up's runner puts it on the app's command line (claude --resume
// ID, codex exec resume ID), where anything else could be a flag its owner
// never allowed: spine refuses it in a runner's session_id event and a
// task, and spine runner refuses a task with one.
func ValidLocalSessionID(id string) bool { return localSessionRe.MatchString(id) }

// ValidateEvents checks a batch of runner events.
func ValidateEvents(evs []RunnerEvent) error {
	if len(evs) == 0 || len(evs) > MaxEventsPerPost {
		return streams.Reject(streams.ReasonInvalidField, "events: 1 to %d per post", MaxEventsPerPost)
	}
	for i, e := range evs {
		if err := validateEvent(i, &e); err != nil {
			return err
		}
		if i > 0 && e.Seq <= evs[i-1].Seq {
			return streams.Reject(streams.ReasonInvalidField, "events[%d].seq %d must be above events[%d].seq %d: seqs increase within a post", i, e.Seq, i-1, evs[i-1].Seq)
		}
	}
	return nil
}

func validateEvent(i int, e *RunnerEvent) error {
	switch {
	case e.Seq < 1 || e.Seq > streams.MaxSeq:
		return streams.Reject(streams.ReasonInvalidField, "events[%d].seq must be 1 to %d", i, int64(streams.MaxSeq))
	case !eventTypes[e.Type]:
		return streams.Reject(streams.ReasonInvalidField, "events[%d].type %q (want assistant_text, session_id, usage, status, terminal)", i, e.Type)
	case !utf8.ValidString(e.Text):
		return streams.Reject(streams.ReasonInvalidUTF8, "events[%d].text is not UTF-8", i)
	case e.Type == EventSessionID && e.SessionID == "":
		return streams.Reject(streams.ReasonMissingField, "events[%d].sessionId is required", i)
	case e.SessionID != "" && !ValidLocalSessionID(e.SessionID):
		return streams.Reject(streams.ReasonInvalidID, "events[%d].sessionId is not an app's session id (a UUID): a follow-up resumes it on the app's command line", i)
	case len(e.Usage) > streams.MaxUsageRawLen:
		return streams.Reject(streams.ReasonFieldTooLong, "events[%d].usage is %d bytes, limit %d", i, len(e.Usage), streams.MaxUsageRawLen)
	}
	field := func(name string) string { return fmt.Sprintf("events[%d].%s", i, name) }
	if err := cmp.Or(streams.CheckLen(field("text"), e.Text, streams.MaxEventTextLen),
		streams.CheckLen(field("status"), e.Status, streams.MaxNameLen),
		streams.CheckLen(field("error"), e.Error, streams.MaxErrorLen)); err != nil {
		return err
	}
	if len(e.Usage) > 0 && string(e.Usage) != "null" {
		return streams.CheckRawJSON("usage", e.Usage)
	}
	return nil
}

// completionStates are the states a runner may end a held task in.
var completionStates = map[string]bool{StateDone: true, StateCancelled: true, StateRefused: true, StateFailed: true}

func validateCompletion(c *Completion) error {
	switch {
	case !completionStates[c.Status]:
		return streams.Reject(streams.ReasonInvalidField, "status %q (want done, cancelled, refused or failed)", c.Status)
	case c.Status == StateRefused && strings.TrimSpace(c.Error) == "":
		return streams.Reject(streams.ReasonMissingField, "error is required with status refused: the reason the caller reads")
	case !streams.ValidID(c.ReceiptID):
		return streams.Reject(streams.ReasonInvalidID, "receiptId")
	}
	return streams.CheckLen("error", c.Error, streams.MaxErrorLen)
}

// maxInventoryNames bounds each of a runner's apps, capabilities and targets.
const maxInventoryNames = 32

func validateInventory(inv *Inventory) error {
	switch {
	case inv == nil:
		return streams.Reject(streams.ReasonMissingField, "runner is required")
	case inv.Machine == "":
		return streams.Reject(streams.ReasonMissingField, "machine is required")
	case !utf8.ValidString(inv.Machine):
		return streams.Reject(streams.ReasonInvalidUTF8, "machine is not UTF-8")
	case inv.ProtocolVersion < 1:
		return streams.Reject(streams.ReasonInvalidField, "protocolVersion must be 1 or more")
	case len(inv.Apps) > maxInventoryNames || len(inv.Capabilities) > maxInventoryNames || len(inv.ExecutionTargets) > maxInventoryNames:
		return streams.Reject(streams.ReasonInvalidField, "at most %d apps, capabilities and targets", maxInventoryNames)
	}
	if err := streams.CheckLen("machine", inv.Machine, streams.MaxNameLen); err != nil {
		return err
	}
	for _, list := range [][]string{inv.Apps, inv.Capabilities, inv.ExecutionTargets} {
		for _, v := range list {
			if v == "" {
				return streams.Reject(streams.ReasonInvalidField, "empty name in apps, capabilities or targets")
			}
			if len(v) > streams.MaxNameLen {
				return streams.Reject(streams.ReasonFieldTooLong, "a name in apps, capabilities or targets is %d bytes, limit %d", len(v), streams.MaxNameLen)
			}
		}
	}
	return nil
}
