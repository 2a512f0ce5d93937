package server

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/spinehq/spine/auth"
	"github.com/spinehq/spine/members"
	"github.com/spinehq/spine/recorder"
	"github.com/spinehq/spine/streams"
)

// The telemetry doors (/otlp/v1/logs, /otlp/v1/metrics, /v1/hooks/…) take
// the apps' own telemetry and record it as session.telemetry envelopes
// (docs/telemetry.md). The caller is a member's token, which records as
// that member, or an org's ingest token, which records each event as the
// member an org admin mapped the event's identity to (package members).

// authedTelemetry takes a member token or an org's ingest token; a runner
// token, or any other, is a 401.
func (s *Server) authedTelemetry(h http.HandlerFunc) http.Handler {
	member := s.authed(h)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tok, ok := auth.BearerToken(r)
		if !ok {
			member.ServeHTTP(w, r)
			return
		}
		claims, err := s.cfg.Signer.Verify(tok, auth.AudienceIngest, time.Now())
		if errors.Is(err, auth.ErrAudience) {
			member.ServeHTTP(w, r) // not an ingest token: a member's, or a 401
			return
		}
		serveMember(w, r, h, claims, err)
	})
}

// Why an event was not recorded: the metric's result and the partial
// success's words.
const (
	refusedUnmapped    = "unmapped"      // an ingest token's event whose identity no admin mapped
	refusedNoMember    = "no_member"     // an ingest token's event that names no user, of a session no member of the org holds
	refusedNoSession   = "no_session"    // the event names no session
	refusedUnknownApp  = "unknown_app"   // its service.name is no app's
	refusedTaken       = "session_taken" // its session is another owner's
	refusedInvalid     = "invalid"       // its envelope breaks a bound (a hook's path past 4,096 bytes)
	telemetryRecorded  = "recorded"
	telemetryIgnored   = "ignored" // an event spine records nothing of
	telemetryFailedLog = "unavailable"
)

// refusalWords say what each refusal means, for a partial success.
var refusalWords = map[string]string{
	refusedUnmapped:   "of an identity no org admin mapped to a member (spine members unmapped)",
	refusedNoMember:   "naming no user, of a session no member of the org holds",
	refusedNoSession:  "naming no session",
	refusedUnknownApp: "of an app spine does not record (service.name)",
	refusedTaken:      "of a session another owner holds",
	refusedInvalid:    "over a field's bound",
}

// telemetryEvent is one translated event on its way to the log.
type telemetryEvent struct {
	env *streams.Envelope
	ids []members.Identity // what it says of its user; none from a hook
	// owner is who it records as, once known; nil while not, and for an
	// event refused.
	owner *streams.Owner
}

// telemetryResult is what became of one request's events.
type telemetryResult struct {
	door                      string         // otlp or hook, the metric's label
	events, recorded, ignored int            // events: all the request carried
	refused                   map[string]int // by refusal
	// unmapped counts what the refused events of an ingest token said of
	// their user (or, naming none, their machine or app), for the admins
	// to see once the rest is recorded (members.Count).
	unmapped map[members.Identity]int64
}

// rejected is how many events were refused.
func (res *telemetryResult) rejected() int64 {
	n := 0
	for _, k := range res.refused {
		n += k
	}
	return int64(n)
}

// count adds res to spine's metrics, failed or not: the events neither
// recorded, ignored nor refused when the log or the database failed count
// as unavailable (an exporter sends them again, and they count again).
func (s *Server) count(res *telemetryResult) {
	s.m.telemetry.WithLabelValues(res.door, telemetryRecorded).Add(float64(res.recorded))
	s.m.telemetry.WithLabelValues(res.door, telemetryIgnored).Add(float64(res.ignored))
	for why, n := range res.refused {
		s.m.telemetry.WithLabelValues(res.door, why).Add(float64(n))
	}
	if left := int64(res.events-res.recorded-res.ignored) - res.rejected(); left > 0 {
		s.m.telemetry.WithLabelValues(res.door, telemetryFailedLog).Add(float64(left))
	}
}

func (res *telemetryResult) refuse(why string) {
	if res.refused == nil {
		res.refused = map[string]int{}
	}
	res.refused[why]++
}

// unmappedAs counts one refused event under id, for the admins.
func (res *telemetryResult) unmappedAs(id members.Identity) {
	if res.unmapped == nil {
		res.unmapped = map[members.Identity]int64{}
	}
	res.unmapped[id]++
}

// errTelemetryUnavailable: the database or the log could not take the
// events; the request is answered 503 and the exporter sends it again
// (its envelopes' ids make the second copy the first).
var errTelemetryUnavailable = errors.New("telemetry: the log or the database is unavailable")

// record publishes evs as caller c: each as its owner, in its session if
// the owner holds it (claimed here for the first), stamped with the
// token's billing claim. It returns once the log has acknowledged each
// published one, or ctx ends; then it counts what the refused ones said
// of their user, so an export answered 503 and sent again counts once.
func (s *Server) record(ctx context.Context, c auth.Claims, evs []*telemetryEvent, res *telemetryResult) error {
	if s.cfg.Publisher == nil {
		return errTelemetryUnavailable
	}
	countEnvelopes(ctx, len(evs))
	if err := s.owners(ctx, c, evs, res); err != nil {
		return err
	}
	if err := s.holdSessions(ctx, c, evs, res); err != nil {
		return err
	}
	if err := s.publishTelemetry(ctx, c, evs, res); err != nil {
		return err
	}
	if err := members.Count(ctx, s.cfg.Pool, c.Org, res.unmapped, time.Now()); err != nil {
		s.log.Error("count unmapped identities failed", "err", err)
		return errTelemetryUnavailable
	}
	return nil
}

// owners finds who each event records as: a member token's member, or
// the member its identity maps to. An ingest token's event that names no
// user (a hook; Codex with a provider's key) waits for its session's
// holder (holdSessions); one whose identity is not mapped is refused and
// its first identity kept to be counted, for the admins to see.
func (s *Server) owners(ctx context.Context, c auth.Claims, evs []*telemetryEvent, res *telemetryResult) error {
	if c.Audience != auth.AudienceIngest {
		for _, ev := range evs {
			ev.owner = &streams.Owner{Org: c.Org, Member: c.Member}
		}
		return nil
	}
	var ids []members.Identity
	for _, ev := range evs {
		ids = append(ids, ev.ids...)
	}
	who, err := members.Resolve(ctx, s.cfg.Pool, c.Org, ids)
	if err != nil {
		s.log.Error("resolve telemetry identities failed", "err", err)
		return errTelemetryUnavailable
	}
	for _, ev := range evs {
		if member, ok := who.Of(ev.ids); ok {
			ev.owner = &streams.Owner{Org: c.Org, Member: member}
		} else if len(ev.ids) > 0 {
			res.unmappedAs(ev.ids[0])
			res.refuse(refusedUnmapped)
		}
	}
	return nil
}

// holdSessions claims each session for its first event's owner where no
// one holds it (session_owners, as a start's id is claimed at ingest), and
// refuses an event of a session another owner holds: it is recorded under
// no one, whatever the caller. An ingest token's event that names no user
// is its session's holder's when the holder is of the token's org, else
// refused and counted under its machine or app (noUser).
func (s *Server) holdSessions(ctx context.Context, c auth.Claims, evs []*telemetryEvent, res *telemetryResult) error {
	starts, lookups := map[string]streams.Owner{}, []string(nil)
	for _, ev := range evs {
		switch sid := ev.env.SessionID; {
		case ev.owner == nil:
			lookups = append(lookups, sid)
		case starts[sid] == (streams.Owner{}):
			starts[sid] = *ev.owner
		}
	}
	held, err := recorder.ClaimSessions(ctx, s.cfg.Pool, starts, lookups)
	if err != nil {
		s.log.Error("claim telemetry sessions failed", "err", err)
		return errTelemetryUnavailable
	}
	for _, ev := range evs {
		h, ok := held[ev.env.SessionID]
		switch {
		case ev.owner == nil && len(ev.ids) > 0: // refused: unmapped
		case ev.owner == nil && (!ok || h.Org != c.Org):
			res.unmappedAs(noUser(ev.env))
			res.refuse(refusedNoMember)
		case ev.owner == nil:
			ev.owner = &h
		case h != *ev.owner:
			ev.owner = nil
			res.refuse(refusedTaken)
		}
	}
	return nil
}

// publishTelemetry publishes each event that has its owner, and waits
// for the log's acknowledgements.
func (s *Server) publishTelemetry(ctx context.Context, c auth.Claims, evs []*telemetryEvent, res *telemetryResult) error {
	var futures []jetstream.PubAckFuture
	for _, ev := range evs {
		if ev.owner == nil {
			continue
		}
		ev.env.Owner = ev.owner
		if c.Billing != "" {
			ev.env.Billing = c.Billing // the token's word over the app's
		}
		f, err := s.cfg.Publisher.PublishAsync(ev.env, &streams.PublishOpts{Caller: *ev.owner})
		if _, ok := streams.AsRejection(err); ok {
			res.refuse(refusedInvalid)
			continue
		}
		if err != nil {
			s.log.Error("publish telemetry failed", "err", err)
			return errTelemetryUnavailable
		}
		futures = append(futures, f)
	}
	for _, f := range futures {
		select {
		case <-f.Ok():
			res.recorded++
		case err := <-f.Err():
			s.log.Error("telemetry not stored", "err", err)
			return errTelemetryUnavailable
		case <-ctx.Done():
			return errTelemetryUnavailable
		}
	}
	return nil
}

// noUser is what an event that named no user is listed as among the
// unmapped: its machine (Codex's host.name, as the workerId) when it named
// one, else its app (every hook; Claude Code names no machine).
func noUser(env *streams.Envelope) members.Identity {
	if env.WorkerID != "" {
		return members.Identity{Kind: members.Machine, Value: env.WorkerID}
	}
	return members.Identity{Kind: members.None, Value: env.App}
}
