package desktop

import (
	"cmp"
	"context"
	"encoding/json"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"
)

// Announcements travel on core NATS (no stream captures spine.notify.>), so
// every spine instance hears them and tells its own listeners: runners'
// event streams learn of queued work, session pages of changes.
const subjectAnnounce = "spine.notify."

// Announcement says a task was queued (Kind "work"), a remote session
// changed (Kind "session") or a runner token was revoked (Kind "revoked").
// It is published after the change is stored, so a listener that reads at
// once sees it.
type Announcement struct {
	Kind      string    `json:"kind"`
	TaskID    string    `json:"taskId,omitempty"`
	TokenID   string    `json:"tokenId,omitempty"` // revoked
	SessionID string    `json:"sessionId,omitempty"`
	Org       string    `json:"org"`
	Member    string    `json:"member"`
	RunnerID  string    `json:"runnerId,omitempty"` // work: the machine it is for, "" = any
	WorkKind  string    `json:"workKind,omitempty"`
	At        time.Time `json:"at"`
}

// Announcement kinds.
const (
	kindWork    = "work"
	kindSession = "session"
	kindRevoked = "revoked"
)

func (s *Service) announce(a Announcement) {
	data, _ := json.Marshal(a)
	subj := subjectAnnounce + a.Kind + "." + cmp.Or(a.SessionID, a.TokenID)
	if err := s.cfg.NC.Publish(subj, data); err != nil {
		s.log.Warn("announce failed; listeners catch up on their next poll", "kind", a.Kind, "err", err)
	}
}

func workKey(org, member string) string     { return "work\x00" + org + "\x00" + member }
func sessionKey(id string) string           { return "session\x00" + id }
func sessionsKey(org, member string) string { return "sessions\x00" + org + "\x00" + member }

// keys are who listens to a: a session's pages and its member's list of
// them, or the member's runners' event streams (work, and revocations of
// their tokens).
func (a Announcement) keys() []string {
	if a.Kind == kindSession {
		return []string{sessionKey(a.SessionID), sessionsKey(a.Org, a.Member)}
	}
	return []string{workKey(a.Org, a.Member)}
}

// hub fans announcements out to this instance's listeners.
type hub struct {
	mu     sync.Mutex
	subs   map[string]map[chan Announcement]struct{}
	closed bool
}

func newHub() *hub { return &hub{subs: map[string]map[chan Announcement]struct{}{}} }

// listen returns a channel of announcements for key and a cancel func. The
// channel is closed when the service stops.
func (h *hub) listen(key string) (<-chan Announcement, func()) {
	ch := make(chan Announcement, 64)
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		close(ch)
		return ch, func() {}
	}
	if h.subs[key] == nil {
		h.subs[key] = map[chan Announcement]struct{}{}
	}
	h.subs[key][ch] = struct{}{}
	return ch, func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		if _, ok := h.subs[key][ch]; ok {
			delete(h.subs[key], ch)
			close(ch)
		}
		if len(h.subs[key]) == 0 {
			delete(h.subs, key) // session ids come and go: keep no key nobody listens to
		}
	}
}

func (h *hub) deliver(msg *nats.Msg) {
	var a Announcement
	if json.Unmarshal(msg.Data, &a) != nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, key := range a.keys() {
		for ch := range h.subs[key] {
			select {
			case ch <- a:
			default: // a slow listener re-reads everything on its next wake-up
			}
		}
	}
}

func (h *hub) close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.closed = true
	for _, set := range h.subs {
		for ch := range set {
			close(ch)
		}
	}
	h.subs = map[string]map[chan Announcement]struct{}{}
}

// waiter blocks writers until the projection has applied a sequence. The
// local projector's commits wake it at once; when another instance leads
// the projector, it reads the checkpoint every pollEvery.
type waiter struct {
	pool *pgxpool.Pool
	name string
	mu   sync.Mutex
	last uint64
	wake chan struct{}
}

const (
	pollEvery = 20 * time.Millisecond
	// MaxApplyWait bounds how long a write waits for the projection.
	MaxApplyWait = 15 * time.Second
)

func newWaiter(pool *pgxpool.Pool, name string) *waiter {
	return &waiter{pool: pool, name: name, wake: make(chan struct{})}
}

func (w *waiter) advance(last uint64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if last > w.last {
		w.last = last
	}
	close(w.wake)
	w.wake = make(chan struct{})
}

func (w *waiter) close() { w.advance(0) }

func (w *waiter) state() (uint64, <-chan struct{}) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.last, w.wake
}

func (w *waiter) wait(ctx context.Context, seq uint64) error {
	ctx, cancel := context.WithTimeout(ctx, MaxApplyWait)
	defer cancel()
	t := time.NewTicker(pollEvery)
	defer t.Stop()
	for {
		last, wake := w.state()
		if last >= seq {
			return nil
		}
		select {
		case <-wake:
		case <-t.C:
			var ck int64
			err := w.pool.QueryRow(ctx, `SELECT last_seq FROM projector_checkpoints WHERE name = $1`, w.name).Scan(&ck)
			if err == nil && uint64(ck) >= seq {
				w.advance(uint64(ck))
			}
		case <-ctx.Done():
			return ErrBusy
		}
	}
}
