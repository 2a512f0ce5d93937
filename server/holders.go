package server

import (
	"context"
	"net/http"

	"github.com/spinehq/spine/recorder"
	"github.com/spinehq/spine/streams"
)

// CodeSessionExists refuses a session.start whose id another owner holds.
const CodeSessionExists = "session_exists"

// holders claims the id of every start in envs for the caller, where no one
// holds it yet, and returns who holds each session envs names. The claim is
// written before anything is published, so of two owners racing to start
// one id exactly one is answered 202.
func (s *Server) holders(ctx context.Context, envs []*streams.Envelope, opts *streams.PublishOpts) (map[string]streams.Owner, error) {
	starts := map[string]streams.Owner{}
	var lookups []string
	for _, e := range envs {
		switch {
		case e == nil || e.SessionID == "":
		case e.Type == streams.TypeSessionStart:
			starts[e.SessionID] = opts.Caller
		default:
			lookups = append(lookups, e.SessionID)
		}
	}
	if len(starts) == 0 && len(lookups) == 0 {
		return nil, nil
	}
	return recorder.ClaimSessions(ctx, s.cfg.Pool, starts, lookups)
}

// checkHolder refuses an envelope for a session the caller does not hold.
// A start is told the id is taken (409), which says only that some owner
// used it. Any other type for a session the caller does not hold gets the
// one answer of a session that was never started, whether another owner
// holds it or no one does: it says nothing at all.
func (s *Server) checkHolder(e *streams.Envelope, held map[string]streams.Owner, opts *streams.PublishOpts) *refusal {
	if e.SessionID == "" {
		return nil
	}
	h, ok := held[e.SessionID]
	if ok && h == opts.Caller {
		return nil
	}
	if e.Type == streams.TypeSessionStart {
		s.m.ingested.WithLabelValues(e.Type, "rejected").Inc()
		return &refusal{http.StatusConflict, CodeSessionExists,
			"session id " + e.SessionID + " is taken by another owner: start the session under a new id"}
	}
	return s.noStart(e)
}

// noStart is the one answer for an envelope of a session the caller may
// not write: that of a session never started.
func (s *Server) noStart(e *streams.Envelope) *refusal {
	s.m.ingested.WithLabelValues(e.Type, "rejected").Inc()
	return &refusal{http.StatusNotFound, streams.ReasonUnknownSession, "session " + e.SessionID + " has no start"}
}
