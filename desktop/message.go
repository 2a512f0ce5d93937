package desktop

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/spinehq/spine/streams"
)

// Message types. A task type is published on spine.task.<taskId>.<suffix>,
// a runner type on spine.runner.<runnerId>.<suffix>, where suffix is the
// type without its "task." or "runner." prefix.
const (
	TypeQueued          = "task.queued"
	TypeClaimed         = "task.claimed"
	TypeHeartbeat       = "task.heartbeat"
	TypeEvents          = "task.events"
	TypeCancelRequested = "task.cancel_requested"
	TypeCompleted       = "task.completed"
	TypeInterrupted     = "task.interrupted"
	TypeExpired         = "task.expired"
	TypeCancelled       = "task.cancelled"
	TypeSessionLinked   = "task.session_linked"
	TypeRegistered      = "runner.registered"
	TypeSeen            = "runner.seen"
)

var knownTypes = map[string]bool{
	TypeQueued: true, TypeClaimed: true, TypeHeartbeat: true, TypeEvents: true, TypeCancelRequested: true,
	TypeCompleted: true, TypeInterrupted: true, TypeExpired: true, TypeCancelled: true, TypeSessionLinked: true,
	TypeRegistered: true, TypeSeen: true,
}

// Subject prefixes of the SPINE_TASKS stream.
const (
	subjectTask   = "spine.task."
	subjectRunner = "spine.runner."
)

// MaxEventsPerPost bounds one post of runner events; streams' field
// bounds (limits.go) bound every string a message carries.
const MaxEventsPerPost = 100

// Message is one fact on the SPINE_TASKS stream. Every transition of a task
// and every change in a runner's inventory or presence is one Message.
type Message struct {
	V        int       `json:"v"`
	Type     string    `json:"type"`
	ID       string    `json:"id"` // Nats-Msg-Id
	At       time.Time `json:"at"` // when spine observed it; projections take times from here
	Org      string    `json:"org"`
	Member   string    `json:"member"`
	TaskID   string    `json:"taskId,omitempty"`
	RunnerID string    `json:"runnerId,omitempty"`
	// Fence is the claim a heartbeat, events or completion speaks for (the
	// claim's stream sequence); an interruption names the claim it ends.
	Fence    uint64        `json:"fence,omitempty"`
	Task     *TaskSpec     `json:"task,omitempty"`     // queued
	Events   []RunnerEvent `json:"events,omitempty"`   // events
	Complete *Completion   `json:"complete,omitempty"` // completed
	Runner   *Inventory    `json:"runner,omitempty"`   // registered
	Reason   string        `json:"reason,omitempty"`   // interrupted, expired, cancelled, cancel_requested
	// RecordedSession is the spine session a runner records for the task
	// (session_linked): the session.start spine takes next.
	RecordedSession string `json:"recordedSession,omitempty"`
}

// TaskSpec is what a queued task asks for.
type TaskSpec struct {
	Kind            string     `json:"kind"` // KindRemoteSession
	Target          string     `json:"target"`
	RemoteSessionID string     `json:"remoteSessionId"`
	NewSession      bool       `json:"newSession,omitempty"` // the first task of its remote session
	Title           string     `json:"title,omitempty"`
	Instructions    string     `json:"instructions"`
	App             string     `json:"app,omitempty"`       // "", claude-code or codex
	Workspace       string     `json:"workspace,omitempty"` // a directory on the runner's machine, or ""
	RunnerID        string     `json:"runnerId,omitempty"`  // the machine it is for; "" = any of the member's
	LocalSessionID  string     `json:"localSessionId,omitempty"`
	DeliverBy       *time.Time `json:"deliverBy,omitempty"`
}

// Runner event types (what a runner reports about its work).
const (
	EventAssistantText = "assistant_text"
	EventSessionID     = "session_id"
	EventUsage         = "usage"
	EventStatus        = "status"
	EventTerminal      = "terminal"
)

var eventTypes = map[string]bool{EventAssistantText: true, EventSessionID: true, EventUsage: true,
	EventStatus: true, EventTerminal: true}

// RunnerEvent is one ordered event a runner posted for a task.
type RunnerEvent struct {
	Seq       int64           `json:"seq"` // 1, 2, 3… per task; a seq already seen is a duplicate
	Type      string          `json:"type"`
	Text      string          `json:"text,omitempty"`
	SessionID string          `json:"sessionId,omitempty"` // session_id: the desktop's local session
	Usage     json.RawMessage `json:"usage,omitempty"`     // usage: as the app reported it
	Status    string          `json:"status,omitempty"`    // terminal: done, failed, cancelled
	Error     string          `json:"error,omitempty"`
}

// Completion ends a claimed task.
type Completion struct {
	Status    string `json:"status"`          // done, cancelled, refused or failed
	Error     string `json:"error,omitempty"` // why, as "code: message"; required with refused
	ReceiptID string `json:"receiptId"`
}

// Inventory is what a runner declares when it registers.
type Inventory struct {
	Machine          string   `json:"machine"`
	Apps             []string `json:"apps"`
	Capabilities     []string `json:"capabilities"` // work kinds it takes, e.g. remote_session
	ProtocolVersion  int      `json:"protocolVersion"`
	ExecutionTargets []string `json:"supportedExecutionTargets"`
}

// Subject is where m is published.
func (m *Message) Subject() string {
	if strings.HasPrefix(m.Type, "runner.") {
		return subjectRunner + m.RunnerID + "." + strings.TrimPrefix(m.Type, "runner.")
	}
	return subjectTask + m.TaskID + "." + strings.TrimPrefix(m.Type, "task.")
}

// TaskSubjects is the filter of every message on one task's subjects: the
// optimistic-concurrency check of a claim or transition covers all of them.
func TaskSubjects(taskID string) string { return subjectTask + taskID + ".>" }

// Marshal encodes m.
func (m *Message) Marshal() ([]byte, error) { return json.Marshal(m) }

// Decode parses and validates a message read from subject. Every error is a
// *streams.Rejection naming the rule the bytes broke.
func Decode(subject string, data []byte) (*Message, error) {
	if len(data) > streams.MaxEnvelopeBytes {
		return nil, streams.Reject(streams.ReasonTooLarge, "message is %d bytes", len(data))
	}
	if !utf8.Valid(data) {
		return nil, streams.Reject(streams.ReasonInvalidUTF8, "message is not UTF-8")
	}
	var m Message
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&m); err != nil {
		if te, ok := errors.AsType[*json.UnmarshalTypeError](err); ok {
			return nil, streams.Reject(streams.ReasonWrongType, "field %s: %s", te.Field, te.Value)
		}
		return nil, streams.Reject(streams.ReasonMalformed, "%v", err)
	}
	streams.Scrub(&m) // PostgreSQL cannot store U+0000: the event is kept, as U+FFFD
	if err := m.Validate(); err != nil {
		return nil, err
	}
	if want := m.Subject(); subject != "" && want != subject {
		return nil, streams.Reject(streams.ReasonSubject, "published on %q, message belongs on %q", subject, want)
	}
	return &m, nil
}
