package desktop

import (
	"encoding/json"
	"time"
)

// Work kinds and targets.
const (
	KindRemoteSession = "remote_session"
	TargetDesktop     = "desktop"
)

// Task states.
const (
	StateQueued      = "queued"
	StateClaimed     = "claimed"
	StateRunning     = "running"
	StateDone        = "done"
	StateInterrupted = "interrupted"
	StateExpired     = "expired"
	StateCancelled   = "cancelled"
	StateRefused     = "refused" // the runner would not do it: it asks more than its owner's config allows
	StateFailed      = "failed"  // the runner's app died or could not start
)

// Protocol figures (docs/design.md#desktop-tasks).
const (
	LeaseTTL          = 60 * time.Second
	HeartbeatInterval = 10 * time.Second
	PresenceWindow    = 10 * time.Minute
	SeenThrottle      = time.Minute
	ProtocolVersion   = 1
)

// Active reports whether a task in state s holds a lease.
func Active(s string) bool { return s == StateClaimed || s == StateRunning }

// Ended reports whether s is final.
func Ended(s string) bool {
	switch s {
	case StateDone, StateInterrupted, StateExpired, StateCancelled, StateRefused, StateFailed:
		return true
	}
	return false
}

// Apps a task may declare (the runner checks them against its config).
const (
	AppClaudeCode = "claude-code"
	AppCodex      = "codex"
)

// Task is a desktop task as the projection holds it.
type Task struct {
	ID              string     `json:"taskId"`
	Kind            string     `json:"kind"`
	RemoteSessionID string     `json:"remoteSessionId"`
	RunnerID        string     `json:"runnerId,omitempty"`
	Title           string     `json:"title,omitempty"`
	Instructions    string     `json:"instructions"`
	App             string     `json:"app,omitempty"`       // claude-code or codex, when the caller asked for one
	Workspace       string     `json:"workspace,omitempty"` // a directory on the runner's machine, when asked
	LocalSessionID  string     `json:"localSessionId,omitempty"`
	State           string     `json:"state"`
	DeliverBy       *time.Time `json:"deliverBy,omitempty"`
	Fence           uint64     `json:"-"`
	ClaimedBy       string     `json:"claimedBy,omitempty"`
	LeaseExpiresAt  *time.Time `json:"leaseExpiresAt,omitempty"`
	CancelRequested bool       `json:"cancelRequested"`
	LastEventSeq    int64      `json:"lastEventSeq"`
	LastSeq         uint64     `json:"-"`
	Error           string     `json:"error,omitempty"`
	ReceiptID       string     `json:"receiptId,omitempty"`
	CreatedAt       time.Time  `json:"createdAt"`
	UpdatedAt       time.Time  `json:"updatedAt"`
	EndedAt         *time.Time `json:"endedAt,omitempty"`
	org, member     string
}

// Runner is a registered desktop runner and its presence.
type Runner struct {
	ID               string    `json:"runnerId"`
	Machine          string    `json:"machine"`
	Apps             []string  `json:"apps"`
	Capabilities     []string  `json:"capabilities"`
	ProtocolVersion  int       `json:"protocolVersion"`
	ExecutionTargets []string  `json:"supportedExecutionTargets"`
	RegisteredAt     time.Time `json:"registeredAt"`
	LastSeen         time.Time `json:"lastSeen"`
	Present          bool      `json:"present"` // seen within the presence window
	org, member      string
}

// Takes reports whether r declared work kind.
func (r *Runner) Takes(kind, target string) bool {
	return contains(r.Capabilities, kind) && (len(r.ExecutionTargets) == 0 || contains(r.ExecutionTargets, target))
}

func contains(list []string, v string) bool {
	for _, x := range list {
		if x == v {
			return true
		}
	}
	return false
}

// Session is a remote session: the tasks sent to one desktop conversation.
type Session struct {
	ID             string    `json:"sessionId"`
	Target         string    `json:"target"`
	Title          string    `json:"title,omitempty"`
	RunnerID       string    `json:"runnerId,omitempty"`
	Machine        string    `json:"machine,omitempty"`
	LocalSessionID string    `json:"localSessionId,omitempty"`
	LatestTaskID   string    `json:"latestTaskId"`
	State          string    `json:"state"`
	Tasks          int       `json:"tasks"`
	Version        uint64    `json:"version"`
	CreatedAt      time.Time `json:"createdAt"`
	LastActivityAt time.Time `json:"lastActivityAt"`
	Error          string    `json:"error,omitempty"` // the latest task's error or end reason
	URL            string    `json:"url,omitempty"`   // the session's page on spine
}

// Entry is one line of a remote session's transcript (docs/desktop.md#reading).
type Entry struct {
	TaskID string `json:"taskId"`
	// Source is "task" (the prompt, what the runner posted, the task's end)
	// or "session" (the app session the runner recorded for the task).
	Source    string `json:"source"`
	SessionID string `json:"sessionId,omitempty"` // source session: the spine session (GET /v1/sessions/{id})
	// Seq is the runner's per-task seq (0 for the prompt and the end) or
	// the recorded session's chunk seq.
	Seq int64 `json:"seq"`
	// Kind: task entries prompt, assistant_text, session_id, usage, status,
	// terminal, end; session entries stdout, stderr, event.
	Kind string          `json:"kind"`
	Text string          `json:"text,omitempty"`
	Data json.RawMessage `json:"data,omitempty"`
	At   time.Time       `json:"at"`
	pos  int64           // a task entry's place in the remote session
}
