package library

import (
	"context"
	"io"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/spinehq/spine/streams"
)

// DefaultFileCap is the largest file a session's event may store inline:
// 1 MiB. Event content travels inside an envelope (at most 4 MiB) and is
// written in the projector's batch transaction, so a small cap keeps batches
// bounded; 1 MiB holds nearly every source file. Larger content is recorded
// by digest and size with contentOmitted, never stored partially; a cockpit
// pushes such files by digest instead. Transcripts and uploads are streamed
// in pieces and are not subject to it.
const DefaultFileCap = 1 << 20

// PieceSize is how many raw bytes one stored piece holds. It is the zstd
// encoder's window too (encoderWindow), which must be a power of two.
const PieceSize = 1 << 20

// DB is what the store needs of a pgx.Tx, *pgx.Conn or *pgxpool.Pool: the
// reads every package takes (streams.Querier), and writes and batches.
type DB interface {
	streams.Querier
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
}

// Beginner is a DB that can start a transaction (a pool or a conn).
type Beginner interface {
	DB
	Begin(ctx context.Context) (pgx.Tx, error)
}

// BlobStore keeps content-addressed bytes. Every write is idempotent:
// storing the same content twice stores it once.
type BlobStore interface {
	// PutMany stores small blobs whose bytes are in memory, inside the
	// caller's transaction.
	PutMany(ctx context.Context, q DB, blobs []Blob) error
	// Put streams r into the store and returns the file it became.
	Put(ctx context.Context, db Beginner, r io.Reader) (File, error)
	// Stat describes a stored file.
	Stat(ctx context.Context, q DB, digest string) (File, error)
	// ReadRange writes n bytes from off to w, each piece verified before it
	// is written. n < 0 means to the end.
	ReadRange(ctx context.Context, q DB, digest string, off, n int64, w io.Writer) error
	// Get reads a whole file into memory, verified against its digest.
	Get(ctx context.Context, q DB, digest string) ([]byte, error)
}

// File is a stored file's description.
type File struct {
	Digest string `json:"digest"`
	Size   int64  `json:"size"`
	Pieces int    `json:"pieces"`
}

// Blob is content and its digest.
type Blob struct {
	Digest  string
	Content []byte
}

// NewBlob digests content.
func NewBlob(content []byte) Blob { return Blob{Digest: Digest(content), Content: content} }
