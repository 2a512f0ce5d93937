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
)

// Chunk is one stdout or stderr chunk of a transcript.
type Chunk struct {
	Seq    int64     `json:"seq"`
	Stream string    `json:"stream"`
	Text   string    `json:"text"`
	At     time.Time `json:"at"`
}

// Queryer is what reads need of a pool, conn or tx.
type Queryer interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// BuildTranscript renders a session's prose as the transcript file: one JSON
// object per line, {"seq","stream","at","text"}, in seq order, so each
// chunk keeps its stream and place.
func BuildTranscript(ctx context.Context, q Queryer, sessionID string) ([]byte, error) {
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
	q         Queryer
	sessionID string
	after     int64
	buf       bytes.Buffer
	done      bool
	err       error
}

// NewTranscriptReader returns a reader of a session's transcript file.
func NewTranscriptReader(ctx context.Context, q Queryer, sessionID string) *TranscriptReader {
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
	defer rows.Close()
	enc := json.NewEncoder(&r.buf)
	n := 0
	for rows.Next() {
		var c Chunk
		if err := rows.Scan(&c.Seq, &c.Stream, &c.Text, &c.At); err != nil {
			return fmt.Errorf("transcript of %s: %w", r.sessionID, err)
		}
		c.At = c.At.UTC()
		if err := enc.Encode(c); err != nil {
			return err
		}
		r.after, n = c.Seq, n+1
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("transcript of %s: %w", r.sessionID, err)
	}
	r.done = n < transcriptPage
	return nil
}

// ErrNotFound: no such session, or not the caller's. Both are one answer.
var ErrNotFound = errors.New("session not found")

// Owner scopes reads to one org and member.
type Owner struct{ Org, Member string }

// GetSession reads a session the owner may see.
func GetSession(ctx context.Context, q Queryer, owner Owner, id string) (*Session, error) {
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
	if len(found) == 0 || found[0].Org != owner.Org || found[0].Member != owner.Member {
		return nil, ErrNotFound
	}
	return found[0], nil
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
func ReadTranscript(ctx context.Context, q Queryer, owner Owner, id string, since int64, limit int) (*TranscriptPage, error) {
	s, err := GetSession(ctx, q, owner, id)
	if err != nil {
		return nil, err
	}
	page := &TranscriptPage{SessionID: id, Status: s.Status, Ended: s.Ended(), Complete: s.Complete,
		Next: since, Chunks: []Chunk{}, TranscriptFileID: s.TranscriptFileID}
	rows, err := q.Query(ctx, `SELECT seq, stream, text, at FROM session_chunks
		WHERE session_id = $1 AND seq > $2 ORDER BY seq LIMIT $3`, id, since, limit+1)
	if err != nil {
		return nil, fmt.Errorf("read transcript %s: %w", id, err)
	}
	defer rows.Close()
	size := 0
	for rows.Next() {
		var c Chunk
		if err := rows.Scan(&c.Seq, &c.Stream, &c.Text, &c.At); err != nil {
			return nil, fmt.Errorf("read transcript %s: %w", id, err)
		}
		if len(page.Chunks) == limit || (len(page.Chunks) > 0 && size+len(c.Text) > MaxPageBytes) {
			page.More = true
			break
		}
		size += len(c.Text)
		page.Chunks = append(page.Chunks, c)
		page.Next = c.Seq
	}
	return page, rows.Err()
}

// SessionMark is how far spine has recorded one session.
type SessionMark struct {
	ID      string `json:"id"`
	LastSeq int64  `json:"lastSeq"`
	Ended   bool   `json:"ended"`
}

// ListSessions lists the owner's sessions with ids after after, in id
// order, at most limit of them.
func ListSessions(ctx context.Context, q Queryer, owner Owner, after string, limit int) ([]SessionMark, error) {
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
