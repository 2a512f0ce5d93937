package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/spinehq/spine/recorder"
	"github.com/spinehq/spine/streams"
)

// chunkKey names a text chunk: a session and its seq.
type chunkKey struct {
	session string
	seq     int64
}

// observer sees when each line's envelopes became readable, two ways:
// the recorder's commit of each envelope (the OnCommit hook, exact and
// free), and its text chunks through spine's HTTP transcript read, which
// is what a person's `spine read transcript --follow` sees. There is no
// stream endpoint for transcripts, so the read is polled: a session's
// transcript is read when a commit brings one of its awaited chunks, and
// every poll interval while any is awaited, so what the observer adds to a
// readable time is about one GET (measured, see ObserverStats), not half a
// polling interval.
type observer struct {
	p    *poster
	poll time.Duration

	mu        sync.Mutex
	committed map[string]time.Time   // envelope id → first commit
	wantIDs   map[string]bool        // awaited envelope ids, not yet committed
	wantText  map[chunkKey]bool      // awaited text chunks, not yet read
	seen      map[chunkKey]time.Time // text chunk → first read through HTTP
	since     map[string]int64       // session → transcript cursor
	gets      []time.Duration
	kick      chan struct{}
	progress  chan struct{} // closed and replaced whenever something awaited arrives
}

func newObserver(p *poster, poll time.Duration) *observer {
	return &observer{p: p, poll: poll, committed: map[string]time.Time{}, wantIDs: map[string]bool{},
		wantText: map[chunkKey]bool{}, seen: map[chunkKey]time.Time{}, since: map[string]int64{},
		kick: make(chan struct{}, 1), progress: make(chan struct{})}
}

// expect registers a line's envelopes before the line is written.
func (o *observer) expect(envs []lagEnvelope) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, e := range envs {
		if _, ok := o.committed[e.id]; !ok {
			o.wantIDs[e.id] = true
		}
		if _, read := o.seen[chunkKey{e.session, e.seq}]; e.seq > 0 && !read {
			o.wantText[chunkKey{e.session, e.seq}] = true
		}
	}
}

// onCommit is the commits tap: it notes each message's envelope id (its
// Nats-Msg-Id, scoped "org/member/id" for HTTP ingest) and wakes the
// poller when an awaited one arrives.
func (o *observer) onCommit(at time.Time, msgs []streams.Message) {
	o.mu.Lock()
	hit := false
	for _, m := range msgs {
		id := m.Header.Get("Nats-Msg-Id")
		id = id[strings.LastIndexByte(id, '/')+1:]
		if _, ok := o.committed[id]; ok || id == "" {
			continue
		}
		o.committed[id] = at
		if o.wantIDs[id] {
			delete(o.wantIDs, id)
			hit = true
		}
	}
	if hit {
		o.advance()
	}
	o.mu.Unlock()
	if hit {
		select {
		case o.kick <- struct{}{}:
		default:
		}
	}
}

// advance tells waiters something arrived; o.mu is held.
func (o *observer) advance() {
	close(o.progress)
	o.progress = make(chan struct{})
}

// run polls until ctx ends.
func (o *observer) run(ctx context.Context) {
	tick := time.NewTicker(o.poll)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-o.kick:
		case <-tick.C:
		}
		for _, s := range o.awaitedSessions() {
			if err := o.read(ctx, s); err != nil && ctx.Err() == nil {
				continue // not yet there (404 before its start is committed): read again later
			}
		}
	}
}

func (o *observer) awaitedSessions() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	var out []string
	for k := range o.wantText {
		if !slices.Contains(out, k.session) {
			out = append(out, k.session)
		}
	}
	return out
}

// read fetches a session's transcript past its cursor, every page, and
// notes when each chunk was first read: when the answer arrived.
func (o *observer) read(ctx context.Context, session string) error {
	for {
		o.mu.Lock()
		since := o.since[session]
		o.mu.Unlock()
		start := time.Now()
		status, body, err := o.p.get(ctx, fmt.Sprintf("/v1/sessions/%s/transcript?since=%d", url.PathEscape(session), since))
		at := time.Now()
		if err != nil {
			return err
		}
		if status != http.StatusOK {
			return fmt.Errorf("transcript %s: %d", session, status)
		}
		var page recorder.TranscriptPage
		if err := json.Unmarshal(body, &page); err != nil {
			return fmt.Errorf("transcript %s: %w", session, err)
		}
		o.note(session, &page, at, at.Sub(start))
		if !page.More {
			return nil
		}
	}
}

func (o *observer) note(session string, page *recorder.TranscriptPage, at time.Time, took time.Duration) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.gets = append(o.gets, took)
	o.since[session] = page.Next
	for _, c := range page.Chunks {
		k := chunkKey{session, c.Seq}
		if _, ok := o.seen[k]; !ok {
			o.seen[k] = at
			delete(o.wantText, k)
		}
	}
	if len(page.Chunks) > 0 {
		o.advance()
	}
}

// lagStall is how long wait tolerates nothing awaited arriving: lines
// come every few milliseconds, and one that is never readable (a
// prediction that does not match what the producer sent) fails the run.
const lagStall = 30 * time.Second

// wait blocks until nothing is awaited, or nothing awaited arrives for
// lagStall.
func (o *observer) wait(ctx context.Context) error {
	for {
		o.mu.Lock()
		left, text := len(o.wantIDs), len(o.wantText)
		progress := o.progress
		o.mu.Unlock()
		if left == 0 && text == 0 {
			return nil
		}
		select {
		case <-progress:
		case <-time.After(lagStall):
			return fmt.Errorf("%w: %d envelopes not committed and %d text chunks not readable after %s without progress",
				ErrStalled, left, text, lagStall)
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
}

// committedAt and readAt are the latest commit and first HTTP read of a
// line's envelopes; ok is false when one is missing (readAt: or the line
// has no text chunk).
func (o *observer) committedAt(envs []lagEnvelope) (last time.Time, ok bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, e := range envs {
		at, found := o.committed[e.id]
		if !found {
			return time.Time{}, false
		}
		last = latest(last, at)
	}
	return last, len(envs) > 0
}

func (o *observer) readAt(envs []lagEnvelope) (last time.Time, ok bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, e := range envs {
		if e.seq == 0 {
			continue
		}
		at, found := o.seen[chunkKey{e.session, e.seq}]
		if !found {
			return time.Time{}, false
		}
		last, ok = latest(last, at), true
	}
	return last, ok
}

func latest(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// getTimes are the durations of the transcript reads so far.
func (o *observer) getTimes() []time.Duration {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]time.Duration(nil), o.gets...)
}
