package desktop

import (
	"cmp"
	"context"
	"errors"
	"strings"
	"time"

	"github.com/spinehq/spine/streams"
)

// CreateRequest is remoteSession.create's arguments.
type CreateRequest struct {
	Target       string     `json:"target"` // "desktop"
	Title        string     `json:"title,omitempty"`
	Instructions string     `json:"instructions"`
	RunnerID     string     `json:"runnerId,omitempty"`  // pins a machine (from remoteSession.list)
	DeliverBy    *time.Time `json:"deliverBy,omitempty"` // opts into store-and-forward until then
	// App and Workspace are what the task declares it needs: the runner
	// refuses it (state refused, with the reason) when its owner's config
	// does not allow that app or directory. Both optional; a follow-up
	// inherits them.
	App       string `json:"app,omitempty"`       // claude-code or codex
	Workspace string `json:"workspace,omitempty"` // a directory path on the runner's machine
}

// Create starts a remote session on one of owner's desktops: the most
// recently seen runner in the presence window, or the pinned one. With no
// runner present and no deliverBy it fails fast with the human step
// (*NeedsRunnerError); with deliverBy it queues, and the task expires if
// nobody claims it in time.
func (s *Service) Create(ctx context.Context, owner streams.Owner, req CreateRequest) (*Session, error) {
	now := s.now()
	if err := req.check(now); err != nil {
		return nil, err
	}
	runnerID, err := s.chooseRunner(ctx, owner, req.RunnerID, req.DeliverBy != nil)
	if err != nil {
		return nil, err
	}
	spec := &TaskSpec{Kind: KindRemoteSession, Target: TargetDesktop, RemoteSessionID: newID("rs-"), NewSession: true,
		Title: strings.TrimSpace(req.Title), Instructions: req.Instructions, App: req.App, Workspace: req.Workspace,
		RunnerID: runnerID, DeliverBy: req.DeliverBy}
	if _, err := s.queue(ctx, owner, spec, now); err != nil {
		return nil, err
	}
	return s.Session(ctx, owner, spec.RemoteSessionID)
}

func (req *CreateRequest) check(now time.Time) error {
	switch {
	case req.Target != TargetDesktop:
		return invalid(`target must be "desktop" (the only execution target spine dispatches to)`)
	case strings.TrimSpace(req.Instructions) == "":
		return invalid("instructions are required")
	case req.RunnerID != "" && !streams.ValidID(req.RunnerID):
		return invalid("runnerId is not a valid id")
	case req.DeliverBy != nil && !req.DeliverBy.After(now):
		return invalid("deliverBy must be in the future")
	case !validApp(req.App):
		return invalid(`app must be "claude-code" or "codex" (or absent: the runner's own choice)`)
	}
	if req.DeliverBy != nil {
		if err := streams.CheckTime("deliverBy", *req.DeliverBy); err != nil {
			return err
		}
	}
	if err := streams.CheckLen("instructions", req.Instructions, streams.MaxInstructionsLen); err != nil {
		return err
	}
	return cmp.Or(streams.CheckLen("title", req.Title, streams.MaxNameLen),
		streams.CheckLen("workspace", req.Workspace, streams.MaxPathLen))
}

// chooseRunner picks the machine a new session goes to. "" means any of the
// member's runners (deliverBy with nobody present).
func (s *Service) chooseRunner(ctx context.Context, owner streams.Owner, pinned string, canWait bool) (string, error) {
	runners, err := s.Runners(ctx, owner)
	if err != nil {
		return "", err
	}
	var last, incapable *Runner // most recently seen, and present without remote_session: named in the human step
	for i := range runners {
		r := &runners[i]
		if pinned != "" && r.ID != pinned {
			continue
		}
		if last == nil {
			last = r
		}
		if r.Present && r.Takes(KindRemoteSession, TargetDesktop) {
			return r.ID, nil
		}
		if r.Present && incapable == nil {
			incapable = r
		}
	}
	if pinned != "" && last == nil {
		return "", ErrUnknownRunner
	}
	if canWait {
		return pinned, nil
	}
	if incapable != nil {
		return "", cannotTake(incapable)
	}
	return "", needsRunner(last)
}

// needsRunner is the human step when no runner is present: start the one
// the member had, or set one up.
func needsRunner(last *Runner) error {
	if last == nil {
		return &NeedsRunnerError{Action: "run `spine runner login` and `spine runner` on your machine: " +
			"no desktop runner has registered for you yet"}
	}
	return &NeedsRunnerError{Machine: last.Machine,
		Action: "start `spine runner` on " + last.Machine + " (last seen " + last.LastSeen.UTC().Format(time.RFC3339) + ")"}
}

// cannotTake is the human step when the member's runner is present but did
// not declare the remote_session capability, so it would never claim.
func cannotTake(r *Runner) error {
	return &NeedsRunnerError{Machine: r.Machine, Action: "the runner on " + r.Machine + " is running but did not declare the " +
		KindRemoteSession + " capability, so it takes no remote sessions: restart it as `spine runner` (which declares " +
		KindRemoteSession + ")"}
}

// queue publishes a queued task and announces it to the member's runners.
func (s *Service) queue(ctx context.Context, owner streams.Owner, spec *TaskSpec, now time.Time) (string, error) {
	m := &Message{Type: TypeQueued, At: now, Org: owner.Org, Member: owner.Member, TaskID: newID("dt-"), Task: spec}
	if _, err := s.publish(ctx, m, publishOpts{}); err != nil {
		return "", err
	}
	s.announce(Announcement{Kind: kindWork, TaskID: m.TaskID, SessionID: spec.RemoteSessionID, Org: owner.Org,
		Member: owner.Member, RunnerID: spec.RunnerID, WorkKind: spec.Kind, At: now})
	s.announce(Announcement{Kind: kindSession, TaskID: m.TaskID, SessionID: spec.RemoteSessionID, Org: owner.Org,
		Member: owner.Member, At: now})
	return m.TaskID, nil
}

// SendReceipt is remoteSession.send's answer.
type SendReceipt struct {
	MessageID string `json:"messageId"` // the follow-up task's id
	State     string `json:"state"`     // "accepted"
	SessionID string `json:"sessionId"`
	URL       string `json:"url"`
}

// Send queues a follow-up prompt as a new task bound to the same local
// session, for the machine that holds the session.
func (s *Service) Send(ctx context.Context, owner streams.Owner, sessionID, prompt string) (*SendReceipt, error) {
	if strings.TrimSpace(prompt) == "" {
		return nil, invalid("prompt is required")
	}
	if err := streams.CheckLen("prompt", prompt, streams.MaxInstructionsLen); err != nil {
		return nil, err
	}
	sess, err := s.sessionForWrite(ctx, owner, sessionID)
	if err != nil {
		return nil, err
	}
	latest, err := s.task(ctx, owner, sess.LatestTaskID)
	if err != nil {
		return nil, err
	}
	deliverBy, err := s.sendDeadline(ctx, owner, sess, latest)
	if err != nil {
		return nil, err
	}
	spec := &TaskSpec{Kind: KindRemoteSession, Target: TargetDesktop, RemoteSessionID: sess.ID, Title: sess.Title,
		Instructions: prompt, App: latest.App, Workspace: latest.Workspace, RunnerID: sess.RunnerID,
		LocalSessionID: sess.LocalSessionID, DeliverBy: deliverBy}
	taskID, err := s.queue(ctx, owner, spec, s.now())
	if err != nil {
		return nil, err
	}
	return &SendReceipt{MessageID: taskID, State: "accepted", SessionID: sess.ID, URL: sess.URL}, nil
}

// sendDeadline decides whether a follow-up can be delivered: the session's
// machine must be present, unless the session is still waiting under a
// deliverBy, which the follow-up inherits.
func (s *Service) sendDeadline(ctx context.Context, owner streams.Owner, sess *Session, latest *Task) (*time.Time, error) {
	if sess.RunnerID == "" {
		if latest.DeliverBy != nil && latest.DeliverBy.After(s.now()) {
			return latest.DeliverBy, nil
		}
		return nil, needsRunner(nil)
	}
	r, err := s.runner(ctx, owner, sess.RunnerID)
	if err != nil {
		return nil, err
	}
	if !r.Present {
		return nil, needsRunner(r)
	}
	if !r.Takes(KindRemoteSession, TargetDesktop) {
		return nil, cannotTake(r)
	}
	return nil, nil
}

func (s *Service) sessionForWrite(ctx context.Context, owner streams.Owner, id string) (*Session, error) {
	return s.Session(ctx, owner, id)
}

// Read limits.
const (
	DefaultReadLimit = 200
	MaxReadLimit     = 1000
)

// ReadResult is remoteSession.read's answer: status plus a bounded slice of
// the transcript after the cursor.
type ReadResult struct {
	Session *Session `json:"session"`
	Entries []Entry  `json:"entries"`
	// RecordedSessions are the app sessions runners recorded for the
	// session's tasks, in task order: each is GET /v1/sessions/{id}.
	RecordedSessions []RecordedSession `json:"recordedSessions"`
	Next             string            `json:"next"` // opaque: pass as since to read on
	More             bool              `json:"more"` // more entries are stored past next
	// Ended: the latest task has ended, every recorded session has ended,
	// and this page reached the end.
	Ended bool `json:"ended"`
}

// Read returns the session's status and the transcript entries after since
// (a cursor: "" or "0" from the start, else the next of an earlier read).
func (s *Service) Read(ctx context.Context, owner streams.Owner, sessionID, since string, limit int) (*ReadResult, error) {
	if limit <= 0 {
		limit = DefaultReadLimit
	}
	limit = min(limit, MaxReadLimit)
	cur, err := parseCursor(since)
	if err != nil {
		return nil, err
	}
	return s.readTx(ctx, owner, sessionID, cur, limit)
}

// ListResult is remoteSession.list's answer.
type ListResult struct {
	Sessions []Session `json:"sessions"`
	Runners  []Runner  `json:"runners"` // presence per machine
}

// List returns owner's remote sessions and runner presence per machine.
func (s *Service) List(ctx context.Context, owner streams.Owner, target string) (*ListResult, error) {
	if target != "" && target != TargetDesktop {
		return &ListResult{Sessions: []Session{}, Runners: []Runner{}}, nil
	}
	sessions, err := s.Sessions(ctx, owner, SessionCursor{}, 100)
	if err != nil {
		return nil, err
	}
	runners, err := s.Runners(ctx, owner)
	if err != nil {
		return nil, err
	}
	if sessions == nil {
		sessions = []Session{}
	}
	if runners == nil {
		runners = []Runner{}
	}
	return &ListResult{Sessions: sessions, Runners: runners}, nil
}

// Cancel cancels the session's latest task: a queued one at once, a claimed
// one by asking its runner (the next heartbeat carries cancelRequested).
func (s *Service) Cancel(ctx context.Context, owner streams.Owner, sessionID string) (*Session, error) {
	sess, err := s.sessionForWrite(ctx, owner, sessionID)
	if err != nil {
		return nil, err
	}
	for range maxClaimRetries {
		t, err := s.task(ctx, owner, sess.LatestTaskID)
		if err != nil {
			return nil, err
		}
		m := &Message{At: s.now(), Org: owner.Org, Member: owner.Member, TaskID: t.ID, Reason: "cancelled by the member"}
		switch {
		case t.State == StateQueued:
			m.Type = TypeCancelled
		case Active(t.State):
			m.Type = TypeCancelRequested
		default:
			return sess, nil // nothing runs: cancelling is a no-op
		}
		_, err = s.publish(ctx, m, publishOpts{expect: &t.LastSeq})
		if errors.Is(err, ErrConflict) {
			continue
		}
		if err != nil {
			return nil, err
		}
		s.announceTask(t, m.At)
		return s.Session(ctx, owner, sessionID)
	}
	return nil, ErrBusy
}

// Changes returns announcements of changes to a session (for live pages);
// the caller re-reads on each.
func (s *Service) Changes(sessionID string) (<-chan Announcement, func()) {
	return s.hub.listen(sessionKey(sessionID))
}

// ListChanges returns announcements of changes to any of owner's remote
// sessions (for the list's page); the caller re-reads on each.
func (s *Service) ListChanges(owner streams.Owner) (<-chan Announcement, func()) {
	return s.hub.listen(sessionsKey(owner.Org, owner.Member))
}
