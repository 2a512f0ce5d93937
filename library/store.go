package library

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/klauspost/compress/zstd"
)

// DefaultFileCap is the largest content stored with a step: 1 MiB keeps any
// one session's batch well under the 4 MiB envelope limit and a page of
// observations cheap to read. Larger content is referenced by digest and
// size with contentOmitted.
const DefaultFileCap = 1 << 20

// Querier is what the store needs of a pgx.Tx, *pgx.Conn or *pgxpool.Pool.
type Querier interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
}

// BlobStore keeps content-addressed bytes. Put is idempotent: storing the
// same content twice stores it once.
type BlobStore interface {
	PutMany(ctx context.Context, q Querier, blobs []Blob) error
	Get(ctx context.Context, q Querier, digest string) ([]byte, error)
}

// Blob is content and its digest.
type Blob struct {
	Digest  string
	Content []byte
}

// NewBlob digests content.
func NewBlob(content []byte) Blob { return Blob{Digest: Digest(content), Content: content} }

// PGStore keeps blobs in PostgreSQL's blobs table, zstd-compressed when
// that is smaller.
type PGStore struct {
	enc *zstd.Encoder
	dec *zstd.Decoder
}

var _ BlobStore = (*PGStore)(nil)

// NewPGStore returns a PostgreSQL blob store.
func NewPGStore() *PGStore {
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedDefault), zstd.WithEncoderConcurrency(1))
	if err != nil {
		panic(err) // only fails on invalid options
	}
	dec, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1))
	if err != nil {
		panic(err)
	}
	return &PGStore{enc: enc, dec: dec}
}

// PutMany stores blobs in one round trip; ones already stored are left alone.
func (s *PGStore) PutMany(ctx context.Context, q Querier, blobs []Blob) error {
	if len(blobs) == 0 {
		return nil
	}
	b := &pgx.Batch{}
	for _, bl := range blobs {
		enc, data := s.encode(bl.Content)
		b.Queue(`INSERT INTO blobs (digest, size, encoding, data) VALUES ($1, $2, $3, $4) ON CONFLICT (digest) DO NOTHING`,
			bl.Digest, len(bl.Content), enc, data)
	}
	if err := q.SendBatch(ctx, b).Close(); err != nil {
		return fmt.Errorf("put %d blobs: %w", len(blobs), err)
	}
	return nil
}

func (s *PGStore) encode(content []byte) (string, []byte) {
	if len(content) < 64 {
		return "raw", append([]byte{}, content...) // never nil: an empty file is zero bytes, not NULL
	}
	z := s.enc.EncodeAll(content, nil)
	if len(z) < len(content) {
		return "zstd", z
	}
	return "raw", content
}

// Get reads a blob and verifies it against its digest.
func (s *PGStore) Get(ctx context.Context, q Querier, digest string) ([]byte, error) {
	var enc string
	var data []byte
	err := q.QueryRow(ctx, `SELECT encoding, data FROM blobs WHERE digest = $1`, digest).Scan(&enc, &data)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("get blob %s: %w", digest, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("get blob %s: %w", digest, err)
	}
	if enc == "zstd" {
		if data, err = s.dec.DecodeAll(data, nil); err != nil {
			return nil, fmt.Errorf("get blob %s: %w: %v", digest, ErrCorrupt, err)
		}
	}
	if Digest(data) != digest {
		return nil, fmt.Errorf("get blob %s: %w", digest, ErrCorrupt)
	}
	return data, nil
}
