package recorder

import (
	"bytes"
	"context"
	"encoding/hex"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"lukechampine.com/blake3"

	"github.com/spinehq/spine/library"
	"github.com/spinehq/spine/streams"
)

// flush writes everything the batch collected, in an order that lets a
// session's transcript include the chunks of its own last batch.
func (b *batch) flush(ctx context.Context) error {
	if err := b.writeReopened(ctx); err != nil {
		return err
	}
	if err := b.writeSuperseded(ctx); err != nil {
		return err
	}
	// Before anything reads a telemetry session's model (producedBy) or
	// writes its row.
	if err := b.writeLedger(ctx); err != nil {
		return err
	}
	b.queueChunks()
	b.r.live.plan(b)
	sessions := b.sortedSessions()
	var ended []*Session
	var earlier []string // ended here, started in an earlier batch, not kept (live.go)
	kept := map[string][]byte{}
	for _, s := range sessions {
		if s.needsFinal {
			ended = append(ended, s)
			if s.isNew {
				continue
			}
			if t, ok := b.r.live.transcript(s.ID, b.before[s.ID], b.chunksOf(s.ID)); ok {
				kept[s.ID] = t
			} else {
				earlier = append(earlier, s.ID)
			}
		}
	}
	small, err := loadTranscripts(ctx, b.tx, earlier)
	if err != nil {
		return err
	}
	maps.Copy(kept, small)
	for _, s := range ended {
		if err := b.finalTranscript(ctx, s, kept[s.ID]); err != nil {
			return err
		}
	}
	missing, err := b.storeBlobs(ctx)
	if err != nil {
		return err
	}
	b.queueSteps(missing)
	b.work.Queue(&b.tx.queued)
	if err := b.copyArtifacts(ctx, missing); err != nil {
		return err
	}
	if err := b.stamp(ctx, ended); err != nil {
		return err
	}
	if err := writeSessions(ctx, b.tx, sessions); err != nil {
		return err
	}
	return b.tx.send(ctx)
}

// storeBlobs writes the batch's files under a savepoint. A Library failure
// never fails the session: the savepoint is rolled back, the failure is
// counted, and every file of the batch is reported missing so the steps
// that reference it say so. A transient failure (streams.IsTransient: a
// lock, a serialization failure, a restart) or a failure to roll back
// aborts the batch instead, which is then retried whole: marking content
// missing is for good.
func (b *batch) storeBlobs(ctx context.Context) (map[string]bool, error) {
	if len(b.blobs) == 0 {
		return nil, nil
	}
	blobs := slices.SortedFunc(maps.Values(b.blobs), func(x, y library.Blob) int {
		return strings.Compare(x.Digest, y.Digest)
	})
	sp, err := b.tx.Begin(ctx)
	if err != nil {
		return nil, fmt.Errorf("library savepoint: %w", err)
	}
	if err := b.r.blobs.PutMany(ctx, sp, blobs); err != nil {
		if streams.IsTransient(err) {
			return nil, fmt.Errorf("library write: %w", err) // a lock, a timeout, a restart: retry the batch
		}
		if rbErr := sp.Rollback(ctx); rbErr != nil {
			return nil, fmt.Errorf("library write failed (%v) and could not be rolled back: %w", err, rbErr)
		}
		b.r.m.libraryFailures.Inc()
		b.r.log.Warn("library write failed; sessions go on with content marked missing", "files", len(blobs), "err", err)
		missing := make(map[string]bool, len(blobs))
		for _, bl := range blobs {
			missing[bl.Digest] = true
		}
		return missing, nil
	}
	if err := sp.Commit(ctx); err != nil {
		return nil, fmt.Errorf("library savepoint release: %w", err)
	}
	return nil, nil
}

// queueSteps hands the batch's steps to the work spine, marking content
// the Library could not store.
func (b *batch) queueSteps(missing map[string]bool) {
	for _, p := range b.steps {
		if d, _ := p.detail["contentDigest"].(string); d != "" && missing[d] {
			p.detail["contentMissing"], p.result["contentMissing"] = true, true
		}
		p.step.Detail, p.obs.Body = mustJSON(p.detail), mustJSON(p.result)
		b.work.AddStep(p.step)
		b.work.AddObservation(p.obs)
	}
}

// queueChunks queues the batch's chunks as one INSERT of arrays.
func (b *batch) queueChunks() {
	n := len(b.chunks)
	if n == 0 {
		return
	}
	id, seq, stream, text, at := make([]string, n), make([]int64, n), make([]string, n), make([]string, n), make([]time.Time, n)
	for i, c := range b.chunks {
		id[i], seq[i], stream[i], text[i], at[i] = c.sessionID, c.Seq, c.Stream, c.Text, c.At
	}
	b.tx.queue(fmt.Sprintf("insert %d chunks", n), `INSERT INTO session_chunks (session_id, seq, stream, text, at)
		SELECT * FROM unnest($1::text[], $2::bigint[], $3::text[], $4::text[], $5::timestamptz[])`, id, seq, stream, text, at)
}

// finalTranscript writes the session's prose as one content-addressed file
// and records it as the session's transcript artifact. A transcript that
// fits in one piece joins the batch's files; a longer one streams into the
// Library page by page under a savepoint of its own (a Library failure marks
// it missing and the session goes on). loaded is the whole transcript when
// loadTranscripts read it, nil otherwise.
func (b *batch) finalTranscript(ctx context.Context, s *Session, loaded []byte) error {
	// head is the transcript when it is in memory, else up to one piece
	// of it read from the chunks (most transcripts are small) and r the rest.
	var head []byte
	var r io.Reader
	var tr *TranscriptReader
	switch {
	case s.isNew:
		// Started in this batch: every chunk it has is in memory.
		head = b.transcriptFromBatch(s.ID)
	case loaded != nil:
		head = loaded
	default:
		tr = NewTranscriptReader(ctx, b.tx, s.ID)
		var err error
		if head, err = io.ReadAll(io.LimitReader(tr, library.PieceSize+1)); err != nil {
			return err
		}
		r = tr
	}
	if len(head) <= library.PieceSize {
		s.TranscriptFileID = b.putBlob(head)
		s.needsFinal = false
		b.transcriptArtifact(s, int64(len(head)), false)
		return nil
	}
	sp, err := b.tx.Begin(ctx)
	if err != nil {
		return fmt.Errorf("transcript savepoint: %w", err)
	}
	whole := io.Reader(bytes.NewReader(head))
	if r != nil {
		whole = io.MultiReader(whole, r)
	}
	f, putErr := b.r.blobs.Put(ctx, sp, whole)
	if putErr != nil {
		if tr != nil && tr.err != nil {
			return tr.err // reading the chunks failed: a database failure, retry the batch
		}
		if streams.IsTransient(putErr) {
			return fmt.Errorf("transcript write: %w", putErr) // retry the batch, never mark it missing
		}
		if err := sp.Rollback(ctx); err != nil {
			return fmt.Errorf("transcript write failed (%v) and could not be rolled back: %w", putErr, err)
		}
		b.r.m.libraryFailures.Inc()
		b.r.log.Warn("transcript could not be stored; marked missing", "session", s.ID, "err", putErr)
		s.needsFinal = false
		return b.transcriptUnstored(ctx, s)
	}
	if err := sp.Commit(ctx); err != nil {
		return fmt.Errorf("transcript savepoint release: %w", err)
	}
	s.TranscriptFileID, s.needsFinal = f.Digest, false
	b.transcriptArtifact(s, f.Size, false)
	return nil
}

// Bounds of loadTranscripts: one transcript is loaded whole only while its
// lines' least size (lineSize) fits in a Library piece and it has at most
// maxLoadedChunks chunks, and while the batch's loaded transcripts, counted
// as rendered, are under maxLoadedBytes; the others stream page by page
// (TranscriptReader). JSON escapes can make a loaded transcript longer than
// a piece (six bytes for a control character or one of <>&), which
// finalTranscript stores as it does any longer file, and the batch's bound
// is passed by at most that much of its last transcript.
const maxLoadedBytes = 32 << 20

// maxLoadedChunks bounds the chunks of one transcript loadTranscripts
// reads; a variable for tests.
var maxLoadedChunks = 2000

// loadable reports whether a transcript of chunks chunks whose lines take
// size bytes (lineSize) is within one transcript's bounds of
// loadTranscripts; the memory transcripts (live.go) keep to them too.
func loadable(size, chunks int) bool { return size <= library.PieceSize && chunks <= maxLoadedChunks }

// loadTranscripts renders, with one query, the transcripts of sessions
// that started in earlier batches, byte for byte as TranscriptReader
// does. A session missing from the result (too long, or past the batch's
// bound) is left to the reader.
func loadTranscripts(ctx context.Context, tx pgx.Tx, ids []string) (map[string][]byte, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	// An index range per session (see loadSessions; the LIMIT keeps the
	// subquery from being flattened into a join over the whole table).
	// At most maxLoadedChunks+1 chunks of each: one with more is left to the
	// reader, never fetched whole here as well.
	rows, err := tx.Query(ctx, `SELECT u.id, c.seq, c.stream, c.text, c.at FROM unnest($1::text[]) AS u(id),
		LATERAL (SELECT seq, stream, text, at FROM session_chunks WHERE session_id = u.id ORDER BY seq LIMIT $2) c
		ORDER BY u.id, c.seq`, ids, maxLoadedChunks+1)
	if err != nil {
		return nil, fmt.Errorf("transcripts of %d sessions: %w", len(ids), err)
	}
	defer rows.Close()
	out := make(map[string][]byte, len(ids))
	for _, id := range ids {
		out[id] = []byte{} // a session without prose has an empty transcript
	}
	var (
		cur    string
		size   int     // cur's lines so far, at least (lineSize)
		kept   []Chunk // cur's chunks
		total  int
		chunks int  // of cur
		skip   bool // cur is left to the reader
	)
	done := func() {
		if cur != "" && !skip {
			var file bytes.Buffer
			renderChunks(&file, nil, kept, nil)
			out[cur] = file.Bytes()
			total += file.Len()
		}
		size = 0
		kept = kept[:0]
	}
	leave := func() { // to the reader
		skip = true
		size = 0
		kept = kept[:0]
		delete(out, cur)
	}
	for rows.Next() {
		var id string
		var c Chunk
		if err := rows.Scan(&id, &c.Seq, &c.Stream, &c.Text, &c.At); err != nil {
			return nil, fmt.Errorf("transcripts of %d sessions: %w", len(ids), err)
		}
		if id != cur {
			done()
			cur, skip, chunks = id, false, 0
			if total >= maxLoadedBytes {
				leave()
			}
		}
		if chunks++; skip || chunks > maxLoadedChunks {
			if !skip {
				leave()
			}
			continue
		}
		c.At = c.At.UTC()
		kept = append(kept, c)
		if size += lineSize(c); size > library.PieceSize || total+size > maxLoadedBytes {
			leave()
		}
	}
	done()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("transcripts of %d sessions: %w", len(ids), err)
	}
	return out, nil
}

// lineSize is the fewest bytes c's transcript line can take: its text and
// stream unescaped, the keys, quotes and time, and the digits of its seq.
// loadTranscripts bounds what it loads by it, so it need not encode every
// line twice; a line that escapes much is only longer, and the rendered
// transcripts count whole in the batch's bound.
func lineSize(c Chunk) int {
	const fixed = len(`{"seq":,"stream":"","text":"","at":"2006-01-02T15:04:05Z"}`) + 1
	return fixed + len(c.Text) + len(c.Stream) + len(strconv.FormatInt(c.Seq, 10))
}

// transcriptUnstored still names the transcript by its digest (hashed from
// the chunks again), with the artifact marked missing.
func (b *batch) transcriptUnstored(ctx context.Context, s *Session) error {
	h := blake3.New(32, nil)
	n, err := io.Copy(h, NewTranscriptReader(ctx, b.tx, s.ID))
	if err != nil {
		return err
	}
	s.TranscriptFileID = library.DigestPrefix + hex.EncodeToString(h.Sum(nil))
	b.transcriptArtifact(s, n, true)
	return nil
}

// transcriptFromBatch renders the transcript of a session whose chunks are
// all in this batch, byte for byte as TranscriptReader renders them from
// the table (times at the microsecond, as PostgreSQL keeps them).
func (b *batch) transcriptFromBatch(sessionID string) []byte {
	var buf bytes.Buffer
	renderChunks(&buf, nil, b.chunksOf(sessionID), nil)
	return buf.Bytes()
}

// chunksOf is the batch's chunks of a session.
func (b *batch) chunksOf(sessionID string) []Chunk {
	var chunks []Chunk
	for _, c := range b.chunks {
		if c.sessionID == sessionID {
			chunks = append(chunks, c.Chunk)
		}
	}
	return chunks
}

// tableTime is t as session_chunks keeps it and reads it back: at the
// microsecond (pgx sends no finer), in UTC.
func tableTime(t time.Time) time.Time { return time.UnixMicro(t.UnixMicro()).UTC() }
