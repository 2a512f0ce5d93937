package recorder

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"lukechampine.com/blake3"

	"github.com/spinehq/spine/library"
)

// flush writes everything the batch collected, in an order that lets a
// session's transcript include the chunks of its own last batch.
func (b *batch) flush(ctx context.Context) error {
	if err := b.copyChunks(ctx); err != nil {
		return err
	}
	sessions := b.sortedSessions()
	var ended []*Session
	for _, s := range sessions {
		if !s.needsFinal {
			continue
		}
		if err := b.finalTranscript(ctx, s); err != nil {
			return err
		}
		ended = append(ended, s)
	}
	missing, err := b.storeBlobs(ctx)
	if err != nil {
		return err
	}
	b.queueSteps(missing)
	if err := b.work.Flush(ctx, b.tx); err != nil {
		return err
	}
	if err := b.copyArtifacts(ctx, missing); err != nil {
		return err
	}
	if err := b.stamp(ctx, ended); err != nil {
		return err
	}
	return writeSessions(ctx, b.tx, sessions)
}

// storeBlobs writes the batch's files under a savepoint. A Library failure
// never fails the session: the savepoint is rolled back, the failure is
// counted, and every file of the batch is reported missing so the steps
// that reference it say so. Only a failure to roll back (the connection is
// gone) aborts the batch, which is then retried whole.
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

func (b *batch) copyChunks(ctx context.Context) error {
	if len(b.chunks) == 0 {
		return nil
	}
	_, err := b.tx.CopyFrom(ctx, pgx.Identifier{"session_chunks"}, []string{"session_id", "seq", "stream", "text", "at"},
		pgx.CopyFromRows(b.chunks))
	if err != nil {
		return fmt.Errorf("copy %d chunks: %w", len(b.chunks), err)
	}
	return nil
}

// finalTranscript writes the session's prose as one content-addressed file
// and records it as the session's transcript artifact. A transcript that
// fits in one piece joins the batch's files; a longer one streams into the
// Library page by page under a savepoint of its own (a Library failure marks
// it missing and the session goes on).
func (b *batch) finalTranscript(ctx context.Context, s *Session) error {
	var r io.Reader
	var tr *TranscriptReader
	if s.isNew {
		// Started in this batch: every chunk it has is in memory.
		r = bytes.NewReader(b.transcriptFromBatch(s.ID))
	} else {
		tr = NewTranscriptReader(ctx, b.tx, s.ID)
		r = tr
	}
	// Most transcripts are small: read up to one piece, growing as needed.
	head, err := io.ReadAll(io.LimitReader(r, library.PieceSize+1))
	if err != nil {
		return err
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
	f, putErr := b.r.blobs.Put(ctx, sp, io.MultiReader(bytes.NewReader(head), r))
	if putErr != nil {
		if tr != nil && tr.err != nil {
			return tr.err // reading the chunks failed: a database failure, retry the batch
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
	enc := json.NewEncoder(&buf)
	for _, row := range b.chunks {
		if row[0].(string) != sessionID {
			continue
		}
		at := row[4].(time.Time)
		c := Chunk{Seq: row[1].(int64), Stream: row[2].(string), Text: row[3].(string),
			At: time.UnixMicro(at.UnixMicro()).UTC()}
		_ = enc.Encode(c)
	}
	return buf.Bytes()
}
