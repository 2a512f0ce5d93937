package recorder

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/jackc/pgx/v5"

	"github.com/spinehq/spine/library"
)

// flush writes everything the batch collected, in an order that lets a
// session's transcript include the chunks of its own last batch.
func (b *batch) flush(ctx context.Context) error {
	if err := b.copyChunks(ctx); err != nil {
		return err
	}
	sessions := b.sortedSessions()
	for _, s := range sessions {
		if !s.needsFinal {
			continue
		}
		if err := b.finalTranscript(ctx, s); err != nil {
			return err
		}
	}
	blobs := slices.SortedFunc(maps.Values(b.blobs), func(x, y library.Blob) int {
		return cmpString(x.Digest, y.Digest)
	})
	if err := b.r.blobs.PutMany(ctx, b.tx, blobs); err != nil {
		return err
	}
	if err := b.work.Flush(ctx, b.tx); err != nil {
		return err
	}
	return writeSessions(ctx, b.tx, sessions)
}

func cmpString(x, y string) int {
	switch {
	case x < y:
		return -1
	case x > y:
		return 1
	}
	return 0
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

// finalTranscript writes the session's prose as one content-addressed file.
func (b *batch) finalTranscript(ctx context.Context, s *Session) error {
	data, err := BuildTranscript(ctx, b.tx, s.ID)
	if err != nil {
		return err
	}
	s.TranscriptFileID = b.putBlob(data)
	s.needsFinal = false
	return nil
}
