package recorder

import (
	"bytes"
	"time"
)

// live keeps the chunks this recorder committed for the running sessions
// it saw start, so that a session's end renders its transcript from memory
// instead of reading every chunk back from session_chunks: a burst's reads
// back were 100–120 ms of its two seconds (docs/performance.md#ingest).
//
// An entry is what the table holds for its session only while nothing else
// wrote chunks of it: it records the session's last seq as of its last
// commit, and a batch uses it only if the session's row, read in the
// batch's own transaction, still says that seq (chunks are never written
// without moving last_seq, which only grows). Another instance that led
// the recorder meanwhile, a batch rolled back, an isolation's attempts:
// none of them is ever seen as the table, since an entry changes only in
// Committed, with what the committed Apply recorded. A session whose
// transcript would not be loaded whole (loadTranscripts' bounds) is not
// kept, nor one past the entries' bound, and is read back as before.
type live struct {
	sessions map[string]*liveSession
	bytes    int
	pending  []liveUpdate // the last Apply's, for Committed
	swept    time.Time    // when idle entries were last dropped
}

// liveSession is one running session's chunks as committed.
type liveSession struct {
	lastSeq int64
	chunks  []Chunk
	size    int       // lineSize of its chunks, as loadTranscripts bounds them
	touched time.Time // its last commit
}

// liveUpdate is what a committed batch did to one session's entry: forget
// it (drop), start it (fresh) or add chunks to it.
type liveUpdate struct {
	id      string
	drop    bool
	fresh   bool
	lastSeq int64
	chunks  []Chunk
}

// maxLiveBytes bounds every entry's chunks together, counted as
// loadTranscripts counts them, and liveEntryBytes more an entry, so that
// sessions without prose are bounded too; a variable for tests.
var maxLiveBytes = 32 << 20

const liveEntryBytes = 256

// liveIdle is how long an entry no commit touched is kept: a session
// another leader ended, or the sweeper while this recorder stood by, is
// never ended here, and its entry would otherwise stay. One whose session
// merely went quiet is read back at its end, as before.
const liveIdle = 15 * time.Minute

func newLive() *live { return &live{sessions: map[string]*liveSession{}} }

// transcript renders the transcript of session id, ended in this batch,
// from its entry and the batch's own chunks (batch), if its entry is the
// table: its last seq is before, the session's last seq as the batch read
// it. ok is false otherwise: the caller reads it back.
func (l *live) transcript(id string, before int64, batch []Chunk) (out []byte, ok bool) {
	e := l.sessions[id]
	if e == nil || e.lastSeq != before {
		return nil, false
	}
	size := e.size - liveEntryBytes
	for _, c := range batch {
		size += lineSize(c)
	}
	if !loadable(size, len(e.chunks)+len(batch)) {
		return nil, false // past loadTranscripts' bounds: the reader pages it, as before
	}
	all := make([]Chunk, 0, len(e.chunks)+len(batch))
	all = append(append(all, e.chunks...), batch...)
	var file bytes.Buffer
	renderChunks(&file, nil, all, nil) // redacts the copies, never the entry's texts
	if file.Len() == 0 {
		return []byte{}, true // a session without prose: empty, not nil (nil is read back)
	}
	return file.Bytes(), true
}

// plan notes what this batch does to the entries, applied once it commits.
func (l *live) plan(b *batch) {
	l.pending = l.pending[:0]
	byID := map[string][]Chunk{}
	for _, c := range b.chunks {
		byID[c.sessionID] = append(byID[c.sessionID], c.Chunk)
	}
	for id, s := range b.sessions {
		before, read := b.before[id]
		switch {
		case s.Ended():
			if l.sessions[id] != nil {
				l.pending = append(l.pending, liveUpdate{id: id, drop: true})
			}
		case s.isNew:
			l.pending = append(l.pending, liveUpdate{id: id, fresh: true, lastSeq: s.LastSeq, chunks: byID[id]})
		case !read || s.LastSeq != before:
			if e := l.sessions[id]; e != nil {
				if read && e.lastSeq == before {
					l.pending = append(l.pending, liveUpdate{id: id, lastSeq: s.LastSeq, chunks: byID[id]})
				} else {
					l.pending = append(l.pending, liveUpdate{id: id, drop: true})
				}
			}
		}
	}
}

// forget drops what the last Apply planned: it was not committed.
func (l *live) forget() { l.pending = l.pending[:0] }

// committed applies the last Apply's plan, and drops the entries no
// commit touched for liveIdle.
func (l *live) committed() {
	now := time.Now()
	if now.Sub(l.swept) > time.Minute {
		for id, e := range l.sessions {
			if now.Sub(e.touched) > liveIdle {
				l.remove(id)
			}
		}
		l.swept = now
	}
	for _, u := range l.pending {
		e := l.sessions[u.id]
		switch {
		case u.drop:
			l.remove(u.id)
			continue
		case u.fresh:
			l.remove(u.id)
			e = &liveSession{size: liveEntryBytes}
			l.sessions[u.id], l.bytes = e, l.bytes+liveEntryBytes
		case e == nil:
			continue
		}
		e.lastSeq, e.touched = u.lastSeq, now
		for _, c := range u.chunks {
			n := lineSize(c)
			e.chunks, e.size, l.bytes = append(e.chunks, c), e.size+n, l.bytes+n
		}
		if !loadable(e.size-liveEntryBytes, len(e.chunks)) || l.bytes > maxLiveBytes {
			l.remove(u.id) // read back at its end, as before
		}
	}
	l.pending = l.pending[:0]
}

func (l *live) remove(id string) {
	if e := l.sessions[id]; e != nil {
		l.bytes -= e.size
		delete(l.sessions, id)
	}
}
