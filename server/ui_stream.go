package server

import (
	"context"
	"net/http"
	"time"

	"github.com/spinehq/spine/desktop"
)

// sse is one server-sent event; one without a name sends nothing.
type sse struct {
	name string
	data any
}

// pageStream is what one open page's event stream follows: changes it
// polls for, changes pushed to it, or both.
type pageStream struct {
	what  string // for the log: "sessions events", …
	ready sse    // the first event, once the stream is open
	// every is how often poll looks for a change (0: never).
	every time.Duration
	// poll says what moved since it last looked (a zero sse: nothing) and
	// whether the stream is over after it. An error is logged and the
	// stream goes on.
	poll func(ctx context.Context) (ev sse, over bool, err error)
	// pushed announces changes as they happen (nil: none); each becomes
	// onPush's event. Its close (spine is stopping) ends the stream.
	pushed <-chan desktop.Announcement
	onPush func(desktop.Announcement) sse
}

// stream serves a page's event stream: one of the caller's open page
// streams (refused with 429 and Retry-After past the caps, see
// streamSlots), "ready", then each change as poll or pushed say, a
// keepalive comment when idle, each flushed as written. It ends when the
// client goes, the page's stream is over, or spine shuts down
// (CloseStreams): a stream never goes idle by itself, and the HTTP
// server's shutdown waits for it.
func (s *Server) stream(w http.ResponseWriter, r *http.Request, ps pageStream) {
	flusher, ok := w.(http.Flusher)
	if !ok {
		writeError(w, http.StatusInternalServerError, CodeInternal, "streaming unsupported")
		return
	}
	release, ok := s.slots.take(owner(r))
	if !ok {
		s.m.refused.WithLabelValues(CodeTooManyStreams).Inc()
		refuse429(w, r, CodeTooManyStreams, "too many open pages follow their changes; this one reloads instead", streamRetry)
		return
	}
	defer release()
	startSSE(w)
	writeSSE(w, ps.ready.name, ps.ready.data)
	flusher.Flush()
	s.follow(w, r.Context(), flusher, ps)
}

// follow writes the stream's events until it ends.
func (s *Server) follow(w http.ResponseWriter, ctx context.Context, flusher http.Flusher, ps pageStream) {
	var tick <-chan time.Time
	if ps.every > 0 {
		t := time.NewTicker(ps.every)
		defer t.Stop()
		tick = t.C
	}
	keep := time.NewTicker(sseKeepAlive)
	defer keep.Stop()
	for {
		var ev sse
		over := false
		select {
		case <-ctx.Done():
			return
		case <-s.closing:
			return
		case a, open := <-ps.pushed:
			if !open {
				return
			}
			ev = ps.onPush(a)
		case <-tick:
			var err error
			if ev, over, err = ps.poll(ctx); err != nil && ctx.Err() == nil {
				s.log.Warn(ps.what+" poll failed", "err", err)
			}
		case <-keep.C:
			_, _ = w.Write([]byte(": keepalive\n\n"))
		}
		if ev.name != "" {
			writeSSE(w, ev.name, ev.data)
		}
		flusher.Flush()
		if over {
			return
		}
	}
}

// CloseStreams ends every page's event stream: an HTTP server's shutdown
// hook (http.Server.RegisterOnShutdown), since Shutdown waits for
// requests that never end by themselves. Streams opened after it end at
// once.
func (s *Server) CloseStreams() { s.closeOnce.Do(func() { close(s.closing) }) }
