package desktop

import (
	"errors"
	"unicode/utf8"

	"github.com/spinehq/spine/streams"
)

func asType[T error](err error, target *T) bool { return errors.As(err, target) }

// Validate checks m against the rules of its type.
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
	case m.Org == "" || m.Member == "" || len(m.Org) > 128 || len(m.Member) > 128:
		return streams.Reject(streams.ReasonMissingField, "org and member are required")
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
	case t.Instructions == "" || len(t.Instructions) > MaxInstructionsBytes:
		return streams.Reject(streams.ReasonInvalidField, "instructions must be 1 to %d bytes", MaxInstructionsBytes)
	case len(t.Title) > maxNameLen || len(t.LocalSessionID) > maxNameLen:
		return streams.Reject(streams.ReasonInvalidField, "title or localSessionId too long")
	}
	return nil
}

// ValidateEvents checks a batch of runner events.
func ValidateEvents(evs []RunnerEvent) error {
	if len(evs) == 0 || len(evs) > MaxEventsPerPost {
		return streams.Reject(streams.ReasonInvalidField, "events: 1 to %d per post", MaxEventsPerPost)
	}
	for i, e := range evs {
		switch {
		case e.Seq < 1:
			return streams.Reject(streams.ReasonInvalidField, "events[%d].seq must be 1 or more", i)
		case i > 0 && e.Seq <= evs[i-1].Seq:
			return streams.Reject(streams.ReasonInvalidField, "events[%d].seq %d must be above events[%d].seq %d: seqs increase within a post", i, e.Seq, i-1, evs[i-1].Seq)
		case !eventTypes[e.Type]:
			return streams.Reject(streams.ReasonInvalidField, "events[%d].type %q (want assistant_text, session_id, usage, status, terminal)", i, e.Type)
		case len(e.Text) > MaxEventTextBytes || !utf8.ValidString(e.Text):
			return streams.Reject(streams.ReasonInvalidField, "events[%d].text: at most %d bytes of UTF-8", i, MaxEventTextBytes)
		case e.Type == EventSessionID && (e.SessionID == "" || len(e.SessionID) > maxNameLen):
			return streams.Reject(streams.ReasonInvalidField, "events[%d].sessionId is required (at most %d bytes)", i, maxNameLen)
		case len(e.Error) > maxNameLen*10:
			return streams.Reject(streams.ReasonInvalidField, "events[%d].error too long", i)
		}
	}
	return nil
}

func validateCompletion(c *Completion) error {
	switch {
	case c.Status != StateDone && c.Status != StateCancelled:
		return streams.Reject(streams.ReasonInvalidField, "status %q (want done or cancelled)", c.Status)
	case !streams.ValidID(c.ReceiptID):
		return streams.Reject(streams.ReasonInvalidID, "receiptId")
	case len(c.Error) > maxNameLen*10:
		return streams.Reject(streams.ReasonInvalidField, "error too long")
	}
	return nil
}

func validateInventory(inv *Inventory) error {
	switch {
	case inv == nil:
		return streams.Reject(streams.ReasonMissingField, "runner is required")
	case inv.Machine == "" || len(inv.Machine) > maxNameLen || !utf8.ValidString(inv.Machine):
		return streams.Reject(streams.ReasonInvalidField, "machine: 1 to %d bytes", maxNameLen)
	case inv.ProtocolVersion < 1:
		return streams.Reject(streams.ReasonInvalidField, "protocolVersion must be 1 or more")
	case len(inv.Apps) > 32 || len(inv.Capabilities) > 32 || len(inv.ExecutionTargets) > 32:
		return streams.Reject(streams.ReasonInvalidField, "at most 32 apps, capabilities and targets")
	}
	for _, list := range [][]string{inv.Apps, inv.Capabilities, inv.ExecutionTargets} {
		for _, v := range list {
			if v == "" || len(v) > maxNameLen {
				return streams.Reject(streams.ReasonInvalidField, "empty or long name in apps, capabilities or targets")
			}
		}
	}
	return nil
}
