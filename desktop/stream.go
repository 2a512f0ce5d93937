package desktop

import (
	"context"
	"errors"
	"time"
)

// WorkStream is one runner's event stream: the announcements of work it
// may take, relayed while the stream is open. A stream outlives the check
// of its token at open, so the HTTP layer calls Tick every KeepAlive: a
// revoked or expired token ends the stream there (and a revocation
// announced on any instance ends it at once), and a runner that only
// listens stays present.
type WorkStream struct {
	s      *Service
	id     RunnerIdentity
	ch     <-chan Announcement
	cancel func()
	// Queued is the work that was waiting when the stream opened.
	Queued []Task
}

// OpenWorkStream starts listening for id's work. It listens before reading
// what is queued, so nothing announced in between is missed.
func (s *Service) OpenWorkStream(ctx context.Context, id RunnerIdentity) (*WorkStream, error) {
	ch, cancel := s.hub.listen(workKey(id.Org, id.Member))
	queued, err := s.Work(ctx, id)
	if err != nil {
		cancel()
		return nil, err
	}
	return &WorkStream{s: s, id: id, ch: ch, cancel: cancel, Queued: queued}, nil
}

// Announcements delivers the member's announcements; pass each to Wants.
// It is closed when the service stops.
func (w *WorkStream) Announcements() <-chan Announcement { return w.ch }

// KeepAlive is how often to call Tick.
func (w *WorkStream) KeepAlive() time.Duration { return w.s.cfg.StreamKeepAlive }

// Close stops listening.
func (w *WorkStream) Close() { w.cancel() }

// Wants reports whether a is work for this runner: queued for its machine
// or for any, of a kind it declares now. The revocation of the stream's own
// token is ErrTokenRevoked: end the stream.
func (w *WorkStream) Wants(ctx context.Context, a Announcement) (bool, error) {
	switch {
	case a.Kind == kindRevoked && a.TokenID == w.id.TokenID:
		return false, ErrTokenRevoked
	case a.Kind != kindWork || (a.RunnerID != "" && a.RunnerID != w.id.RunnerID):
		return false, nil
	}
	r, err := w.s.runner(ctx, w.id.Owner, w.id.RunnerID)
	if errors.Is(err, ErrUnknownRunner) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return r.Takes(a.WorkKind, TargetDesktop), nil
}

// Tick checks the token again (revoked or expired: ErrTokenRevoked or
// auth.ErrExpired, end the stream) and marks the runner seen, throttled
// like every runner request.
func (w *WorkStream) Tick(ctx context.Context) error {
	if err := w.s.CheckRunner(ctx, w.id); err != nil {
		return err
	}
	_, err := w.s.registered(ctx, w.id)
	if errors.Is(err, ErrNotRegistered) {
		return nil
	}
	return err
}
