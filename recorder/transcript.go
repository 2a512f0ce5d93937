package recorder

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/spinehq/spine/accounting"
	"github.com/spinehq/spine/secrets"
	"github.com/spinehq/spine/streams"
)

// Chunk is one stdout or stderr chunk of a transcript.
type Chunk struct {
	Seq    int64     `json:"seq"`
	Stream string    `json:"stream"`
	Text   string    `json:"text"`
	At     time.Time `json:"at"`
}

// BuildTranscript renders a session's prose as the transcript file: one JSON
// object per line, {"seq","stream","text","at"}, in seq order, so each
// chunk keeps its stream and place.
func BuildTranscript(ctx context.Context, q streams.Querier, sessionID string) ([]byte, error) {
	return io.ReadAll(NewTranscriptReader(ctx, q, sessionID))
}

// transcriptPage is how many chunks a TranscriptReader reads per query.
const transcriptPage = 500

// TranscriptReader streams a transcript file page by page, so a session of
// any length is written without holding it in memory. Each page's query is
// read to its end before any bytes are returned, so the reader can share a
// connection (the projector's transaction) with whoever consumes it.
type TranscriptReader struct {
	ctx       context.Context
	q         streams.Querier
	sessionID string
	after     int64
	before    map[string]string // each stream's last text so far, as stored: the next page's context
	buf       bytes.Buffer
	done      bool
	err       error
}

// NewTranscriptReader returns a reader of a session's transcript file.
func NewTranscriptReader(ctx context.Context, q streams.Querier, sessionID string) *TranscriptReader {
	return &TranscriptReader{ctx: ctx, q: q, sessionID: sessionID}
}

func (r *TranscriptReader) Read(p []byte) (int, error) {
	for r.buf.Len() == 0 && !r.done && r.err == nil {
		r.err = r.page()
	}
	if r.buf.Len() > 0 {
		return r.buf.Read(p)
	}
	if r.err != nil {
		return 0, r.err
	}
	return 0, io.EOF
}

func (r *TranscriptReader) page() error {
	rows, err := r.q.Query(r.ctx, `SELECT seq, stream, text, at FROM session_chunks
		WHERE session_id = $1 AND seq > $2 ORDER BY seq LIMIT $3`, r.sessionID, r.after, transcriptPage)
	if err != nil {
		return fmt.Errorf("transcript of %s: %w", r.sessionID, err)
	}
	chunks, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (Chunk, error) {
		var c Chunk
		err := row.Scan(&c.Seq, &c.Stream, &c.Text, &c.At)
		c.At = c.At.UTC()
		return c, err
	})
	if err != nil {
		return fmt.Errorf("transcript of %s: %w", r.sessionID, err)
	}
	r.done = len(chunks) < transcriptPage
	if len(chunks) == 0 {
		return nil
	}
	r.after = chunks[len(chunks)-1].Seq
	after := map[string]string{}
	if !r.done {
		if after, err = neighbours(r.ctx, r.q, `SELECT stream, left(text, $3) FROM session_chunks
			WHERE session_id = $1 AND seq > $2 ORDER BY seq LIMIT $4`, r.sessionID, r.after); err != nil {
			return err
		}
	}
	before := r.before
	r.before = map[string]string{}
	for _, c := range chunks {
		r.before[c.Stream] = c.Text
	}
	renderChunks(&r.buf, before, chunks, after)
	return nil
}

// renderChunks writes chunks as transcript lines, one JSON object each,
// redacted across their boundaries (see redactAcross). Every way a
// transcript file is made goes through here, so they agree byte for byte.
func renderChunks(buf *bytes.Buffer, before map[string]string, chunks []Chunk, after map[string]string) {
	redactAcross(before, chunks, after)
	n := 0
	for i := range chunks {
		n += len(chunks[i].Text) + len(chunks[i].Stream) + chunkLineBytes
	}
	buf.Grow(n)
	for i := range chunks {
		line, _ := appendChunk(buf.AvailableBuffer(), &chunks[i]) // a time JSON refuses: no line, as encoding/json
		buf.Write(line)
	}
}

// chunkLineBytes is what a line typically adds to its text (keys, seq, time;
// escapes add more): Grow's estimate, not a bound.
const chunkLineBytes = 80

// ErrNotFound: no such session, or not the caller's. Both are one answer.
var ErrNotFound = errors.New("session not found")

// GetSession reads a session the owner may see.
func GetSession(ctx context.Context, q streams.Querier, owner streams.Owner, id string) (*Session, error) {
	return getSession(ctx, q, id, func(s *Session) bool { return s.Org == owner.Org && s.Member == owner.Member })
}

// GetSessionIn reads a session in a page's scope: the scope's own when it
// names a member, any of the org's when its Member is "" (an org admin's
// pages). Outside it, the answer is ErrNotFound, as for a missing session.
func GetSessionIn(ctx context.Context, q streams.Querier, scope streams.Owner, id string) (*Session, error) {
	return getSession(ctx, q, id, func(s *Session) bool {
		return s.Org == scope.Org && (scope.Member == "" || s.Member == scope.Member)
	})
}

func getSession(ctx context.Context, q streams.Querier, id string, visible func(*Session) bool) (*Session, error) {
	// By primary key alone, owner checked here: with org and member in the
	// WHERE, a planner without statistics may walk the member's index
	// past every one of their sessions instead.
	rows, err := q.Query(ctx, `SELECT `+sessionColumns+` FROM sessions WHERE id = $1`, id)
	if err != nil {
		return nil, fmt.Errorf("get session %s: %w", id, err)
	}
	found, err := scanSessions(rows)
	if err != nil {
		return nil, fmt.Errorf("get session %s: %w", id, err)
	}
	if len(found) == 0 || !visible(found[0]) {
		return nil, ErrNotFound
	}
	s := found[0]
	s.CancelRequestedAt = s.cancelRequested
	if len(s.Usage) > 0 {
		var u streams.Usage
		if err := json.Unmarshal(s.Usage, &u); err != nil {
			return nil, fmt.Errorf("get session %s: usage: %w", id, err)
		}
		s.Tokens = accounting.Normalise(&u)
	}
	return s, nil
}

// MaxPageBytes bounds one transcript page's text.
const MaxPageBytes = 1 << 20

// TranscriptPage is a slice of a transcript. Live and ended sessions get
// the same shape; Ended tells a follower when to stop.
type TranscriptPage struct {
	SessionID string  `json:"sessionId"`
	Status    string  `json:"status"`
	Ended     bool    `json:"ended"`
	Complete  bool    `json:"complete"`
	Chunks    []Chunk `json:"chunks"`
	Next      int64   `json:"next"` // pass as since for the next page
	More      bool    `json:"more"` // more chunks are stored past Next
	// TranscriptFileID names the final transcript file once the session ended.
	TranscriptFileID string `json:"transcriptFileId,omitempty"`
}

// ReadTranscript returns chunks with seq > since: at most limit of them and
// at most MaxPageBytes of text (always at least one chunk if any exist).
// Each stream's chunks are redacted as one text, with the chunks around
// the page as context (see redactAcross). The session is read in scope,
// as GetSessionIn reads it: an owner's own, or (Member "") the org's.
func ReadTranscript(ctx context.Context, q streams.Querier, scope streams.Owner, id string, since int64, limit int) (*TranscriptPage, error) {
	s, err := GetSessionIn(ctx, q, scope, id)
	if err != nil {
		return nil, err
	}
	page := &TranscriptPage{SessionID: id, Status: s.Status, Ended: s.Ended(), Complete: s.Complete,
		Next: since, Chunks: []Chunk{}, TranscriptFileID: s.TranscriptFileID}
	return page, readChunks(ctx, q, page, id, since, limit)
}

// ReadChunks is ReadTranscript's page of chunks (Chunks, Next, More)
// without the session's row, for a reader that read the row itself and
// checked its owner: remoteSession.read, over the sessions it lists.
func ReadChunks(ctx context.Context, q streams.Querier, id string, since int64, limit int) (*TranscriptPage, error) {
	page := &TranscriptPage{SessionID: id, Next: since, Chunks: []Chunk{}}
	return page, readChunks(ctx, q, page, id, since, limit)
}

func readChunks(ctx context.Context, q streams.Querier, page *TranscriptPage, id string, since int64, limit int) error {
	if err := readPage(ctx, q, page, id, since, limit); err != nil {
		return err
	}
	before, err := neighbours(ctx, q, `SELECT stream, right(text, $3) FROM session_chunks
		WHERE session_id = $1 AND seq <= $2 ORDER BY seq DESC LIMIT $4`, id, since)
	if err != nil {
		return err
	}
	after := map[string]string{}
	if page.More {
		if after, err = neighbours(ctx, q, `SELECT stream, left(text, $3) FROM session_chunks
			WHERE session_id = $1 AND seq > $2 ORDER BY seq LIMIT $4`, id, page.Next); err != nil {
			return err
		}
	}
	redactAcross(before, page.Chunks, after)
	return nil
}

func readPage(ctx context.Context, q streams.Querier, page *TranscriptPage, id string, since int64, limit int) error {
	rows, err := q.Query(ctx, `SELECT seq, stream, text, at FROM session_chunks
		WHERE session_id = $1 AND seq > $2 ORDER BY seq LIMIT $3`, id, since, limit+1)
	if err != nil {
		return fmt.Errorf("read transcript %s: %w", id, err)
	}
	defer rows.Close()
	size := 0
	for rows.Next() {
		var c Chunk
		if err := rows.Scan(&c.Seq, &c.Stream, &c.Text, &c.At); err != nil {
			return fmt.Errorf("read transcript %s: %w", id, err)
		}
		if len(page.Chunks) == limit || (len(page.Chunks) > 0 && size+len(c.Text) > MaxPageBytes) {
			page.More = true
			break
		}
		size += len(c.Text)
		page.Chunks = append(page.Chunks, c)
		page.Next = c.Seq
	}
	return rows.Err()
}

// How far around a page redactAcross looks for each stream's neighbour:
// up to contextChunks chunks each way, and contextChars of each.
const (
	contextChunks = 16
	contextChars  = 4096
)

// neighbours runs one of ReadTranscript's context queries and keeps, for
// each stream, the text of the nearest chunk.
func neighbours(ctx context.Context, q streams.Querier, sql, id string, seq int64) (map[string]string, error) {
	out := map[string]string{}
	rows, err := q.Query(ctx, sql, id, seq, contextChars, contextChunks)
	if err != nil {
		return nil, fmt.Errorf("read transcript %s: %w", id, err)
	}
	defer rows.Close()
	for rows.Next() {
		var stream, text string
		if err := rows.Scan(&stream, &text); err != nil {
			return nil, fmt.Errorf("read transcript %s: %w", id, err)
		}
		if _, ok := out[stream]; !ok {
			out[stream] = text
		}
	}
	return out, rows.Err()
}

// redactAcross redacts each stream's chunks as one text, so a key the
// producer cut in two (the end of one chunk, the start of the next of the
// same stream) is replaced in both pieces. Each piece was redacted on its
// own at the door; the piece no rule recognises alone is caught only here.
// before and after are each stream's neighbouring text outside the page:
// a key cut at the page's edge is caught too, and they are not returned.
func redactAcross(before map[string]string, chunks []Chunk, after map[string]string) {
	byStream := map[string][]int{}
	for i, c := range chunks {
		byStream[c.Stream] = append(byStream[c.Stream], i)
	}
	for stream, idx := range byStream {
		parts := []string{before[stream]}
		for _, i := range idx {
			parts = append(parts, chunks[i].Text)
		}
		parts = secrets.Joined(append(parts, after[stream]))
		for k, i := range idx {
			chunks[i].Text = parts[k+1]
		}
	}
}

// SessionMark is how far spine has recorded one session.
type SessionMark struct {
	ID      string `json:"id"`
	LastSeq int64  `json:"lastSeq"`
	Ended   bool   `json:"ended"`
}

// ListSessions lists the owner's sessions with ids after after, in id
// order, at most limit of them.
func ListSessions(ctx context.Context, q streams.Querier, owner streams.Owner, after string, limit int) ([]SessionMark, error) {
	rows, err := q.Query(ctx, `SELECT id, last_seq, ended_at IS NOT NULL FROM sessions
		WHERE org = $1 AND member = $2 AND id > $3 ORDER BY id LIMIT $4`, owner.Org, owner.Member, after, limit)
	if err != nil {
		return nil, fmt.Errorf("list sessions: %w", err)
	}
	marks, err := pgx.CollectRows(rows, pgx.RowToStructByPos[SessionMark])
	if err != nil {
		return nil, fmt.Errorf("list sessions: %w", err)
	}
	return marks, nil
}
