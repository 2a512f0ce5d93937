package desktop_test

import (
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spinehq/spine/desktop"
	"github.com/spinehq/spine/internal/jsonfields"
	"github.com/spinehq/spine/streams"
)

// messageBound is a string field of a runner or task message, its bound,
// and a valid message with v in that field.
type messageBound struct {
	field string
	limit int
	build func(v string) *desktop.Message
}

func baseMessage(typ string) *desktop.Message {
	return &desktop.Message{V: 1, Type: typ, ID: "m1", At: time.Now().UTC(), Org: "acme", Member: "alice",
		TaskID: "t1", RunnerID: "r1", Fence: 1}
}

func queued(set func(*desktop.TaskSpec)) func(string) *desktop.Message {
	return func(v string) *desktop.Message {
		m := baseMessage(desktop.TypeQueued)
		m.Task = &desktop.TaskSpec{Kind: desktop.KindRemoteSession, Target: desktop.TargetDesktop, RemoteSessionID: "rs1",
			Instructions: "x"}
		set(m.Task)
		return m
	}
}

func event(typ string, set func(*desktop.RunnerEvent, string)) func(string) *desktop.Message {
	return func(v string) *desktop.Message {
		m := baseMessage(desktop.TypeEvents)
		e := desktop.RunnerEvent{Seq: 1, Type: typ, SessionID: "0b0a5d1e-7c1f-4a59-9d5e-2f6f1d2c3b4a"}
		set(&e, v)
		m.Events = []desktop.RunnerEvent{e}
		return m
	}
}

func registered(set func(*desktop.Inventory, string)) func(string) *desktop.Message {
	return func(v string) *desktop.Message {
		m := baseMessage(desktop.TypeRegistered)
		m.Runner = &desktop.Inventory{Machine: "laptop", ProtocolVersion: 1}
		set(m.Runner, v)
		return m
	}
}

var messageBounds = []messageBound{
	{"reason", streams.MaxReasonLen, func(v string) *desktop.Message {
		m := baseMessage(desktop.TypeInterrupted)
		m.Reason = v
		return m
	}},
	{"task.title", streams.MaxNameLen, func(v string) *desktop.Message {
		return queued(func(t *desktop.TaskSpec) { t.Title = v })(v)
	}},
	{"task.instructions", streams.MaxInstructionsLen, func(v string) *desktop.Message {
		return queued(func(t *desktop.TaskSpec) { t.Instructions = v })(v)
	}},
	{"task.workspace", streams.MaxPathLen, func(v string) *desktop.Message {
		return queued(func(t *desktop.TaskSpec) { t.Workspace = v })(v)
	}},
	{"events.text", streams.MaxEventTextLen, event(desktop.EventAssistantText, func(e *desktop.RunnerEvent, v string) { e.Text = v })},
	{"events.status", streams.MaxNameLen, event(desktop.EventStatus, func(e *desktop.RunnerEvent, v string) { e.Status = v })},
	{"events.error", streams.MaxErrorLen, event(desktop.EventTerminal, func(e *desktop.RunnerEvent, v string) { e.Error = v })},
	{"complete.error", streams.MaxErrorLen, func(v string) *desktop.Message {
		m := baseMessage(desktop.TypeCompleted)
		m.Complete = &desktop.Completion{Status: desktop.StateDone, ReceiptID: "rc1", Error: v}
		return m
	}},
	{"runner.machine", streams.MaxNameLen, registered(func(i *desktop.Inventory, v string) { i.Machine = v })},
	{"runner.apps", streams.MaxNameLen, registered(func(i *desktop.Inventory, v string) { i.Apps = []string{"a", v} })},
	{"runner.capabilities", streams.MaxNameLen, registered(func(i *desktop.Inventory, v string) { i.Capabilities = []string{v} })},
	{"runner.supportedExecutionTargets", streams.MaxNameLen,
		registered(func(i *desktop.Inventory, v string) { i.ExecutionTargets = []string{v} })},
}

// ruledMessageFields are held by a rule other than a length: ids
// (streams.ValidID), an app's session id (desktop.ValidLocalSessionID: a
// UUID) and closed value sets.
var ruledMessageFields = []string{"type", "id", "org", "member", "taskId", "runnerId", "task.kind", "task.target",
	"task.remoteSessionId", "task.runnerId", "recordedSession", "task.app", "events.type", "complete.status", "complete.receiptId",
	"task.localSessionId", "events.sessionId"}

// createRequestBounds are remoteSession.create's string fields; their
// bounds are proven over HTTP by TestRunnerAndRemoteSessionFieldBounds
// (title, instructions, workspace) and by the id rule (runnerId) and closed
// sets (target, app).
var createRequestBounds = []string{"target", "title", "instructions", "runnerId", "app", "workspace"}

// Every string and []string field of a runner or task message and of a
// remote-session request has a bound or a rule: a field added without one
// fails here. Each bound holds: at it the message is valid, one byte over
// it is field_too_long naming the field, never the value.
func TestEveryMessageStringFieldIsBounded(t *testing.T) {
	names := slices.Clone(ruledMessageFields)
	for _, b := range messageBounds {
		names = append(names, b.field)
	}
	for _, path := range jsonfields.Strings(reflect.TypeFor[desktop.Message]()) {
		if !slices.Contains(names, path) {
			t.Errorf("message field %s has no bound: add it to validate.go, this table and docs/limits.md", path)
		}
	}
	for _, path := range jsonfields.Strings(reflect.TypeFor[desktop.CreateRequest]()) {
		if !slices.Contains(createRequestBounds, path) {
			t.Errorf("remoteSession.create field %s has no bound", path)
		}
	}
	for _, b := range messageBounds {
		t.Run(b.field, func(t *testing.T) {
			if err := b.build(strings.Repeat("x", b.limit)).Validate(); err != nil {
				t.Fatalf("at the bound: %v", err)
			}
			rej, ok := streams.AsRejection(b.build(strings.Repeat("x", b.limit+1)).Validate())
			name := b.field[strings.LastIndex(b.field, ".")+1:]
			if !ok || rej.Reason != streams.ReasonFieldTooLong || strings.Contains(rej.Detail, "xxxxxxxx") {
				t.Fatalf("one over the bound: %+v, want %s", rej, streams.ReasonFieldTooLong)
			}
			if !strings.Contains(rej.Detail, name) && !strings.Contains(rej.Detail, "apps, capabilities or targets") {
				t.Fatalf("detail %q does not name %s", rej.Detail, name)
			}
		})
	}
}
