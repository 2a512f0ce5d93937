package library

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"

	"github.com/jackc/pgx/v5"
	"lukechampine.com/blake3"
)

// PGStore keeps files in PostgreSQL: library_files and library_pieces.
type PGStore struct {
	c *codec
	m *Metrics
}

var _ BlobStore = (*PGStore)(nil)

// NewPGStore returns a PostgreSQL blob store; m may be nil.
func NewPGStore(m *Metrics) *PGStore {
	if m == nil {
		m = NewMetrics(nil)
	}
	return &PGStore{c: newCodec(), m: m}
}

// Metrics are the store's metrics.
func (s *PGStore) Metrics() *Metrics { return s.m }

// PutMany stores in-memory blobs in the caller's transaction. Blobs already
// stored are skipped before any compression work.
func (s *PGStore) PutMany(ctx context.Context, q DB, blobs []Blob) error {
	if len(blobs) == 0 {
		return nil
	}
	fresh, err := s.missing(ctx, q, blobs)
	if err != nil {
		return err
	}
	// Files and pieces travel as arrays: one statement per table for every
	// maxStatementBytes of pieces (PostgreSQL refuses a message over 1 GB,
	// and a batch of large files could come near it).
	b := &pgx.Batch{}
	var f fileRows
	var p pieceRows
	queue := func() {
		if len(f.digest) > 0 {
			b.Queue(`INSERT INTO library_files (digest, size, pieces, piece_size)
				SELECT d, s, n, $4 FROM unnest($1::text[], $2::bigint[], $3::bigint[]) AS u(d, s, n)
				ON CONFLICT DO NOTHING`, f.digest, f.size, f.pieces, PieceSize)
		}
		if len(p.digest) > 0 {
			b.Queue(`INSERT INTO library_pieces (digest, idx, size, encoding, hash, data)
				SELECT * FROM unnest($1::text[], $2::int[], $3::int[], $4::text[], $5::bytea[], $6::bytea[])
				ON CONFLICT DO NOTHING`, p.digest, p.idx, p.size, p.encoding, p.hash, p.data)
		}
		f, p = fileRows{}, pieceRows{}
	}
	for _, bl := range fresh {
		pieces := s.c.split(bl.Content)
		f.digest, f.size, f.pieces = append(f.digest, bl.Digest), append(f.size, int64(len(bl.Content))), append(f.pieces, int64(len(pieces)))
		for _, pc := range pieces {
			if p.bytes+len(pc.data) > maxStatementBytes && len(p.digest) > 0 {
				queue()
			}
			p.digest, p.idx, p.size = append(p.digest, bl.Digest), append(p.idx, int32(pc.idx)), append(p.size, int32(pc.size))
			p.encoding, p.hash, p.data = append(p.encoding, pc.encoding), append(p.hash, pc.hash), append(p.data, pc.data)
			p.bytes += len(pc.data)
		}
		s.m.bytes.WithLabelValues("put").Add(float64(len(bl.Content)))
	}
	queue()
	s.m.files.WithLabelValues("stored").Add(float64(len(fresh)))
	s.m.files.WithLabelValues("deduplicated").Add(float64(len(blobs) - len(fresh)))
	if b.Len() == 0 {
		return nil
	}
	if err := q.SendBatch(ctx, b).Close(); err != nil {
		return fmt.Errorf("put %d files: %w", len(fresh), err)
	}
	return nil
}

// maxStatementBytes bounds the piece data of one INSERT in PutMany; a
// variable for tests.
var maxStatementBytes = 64 << 20

// fileRows and pieceRows are PutMany's rows as columns.
type fileRows struct {
	digest       []string
	size, pieces []int64
}

type pieceRows struct {
	digest, encoding []string
	idx, size        []int32
	hash, data       [][]byte
	bytes            int
}

// missing returns the blobs not stored yet, each digest once.
func (s *PGStore) missing(ctx context.Context, q DB, blobs []Blob) ([]Blob, error) {
	digests := make([]string, len(blobs))
	for i, b := range blobs {
		digests[i] = b.Digest
	}
	// One index probe per digest, whatever the table's statistics say
	// (digest = ANY($1) seq-scans a young, never-analysed table).
	rows, err := q.Query(ctx, `SELECT d FROM unnest($1::text[]) AS d
		WHERE EXISTS (SELECT 1 FROM library_files f WHERE f.digest = d)`, digests)
	if err != nil {
		return nil, fmt.Errorf("look up %d files: %w", len(blobs), err)
	}
	have, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("look up %d files: %w", len(blobs), err)
	}
	seen := make(map[string]bool, len(have)+len(blobs))
	for _, d := range have {
		seen[d] = true
	}
	var out []Blob
	for _, b := range blobs {
		if !seen[b.Digest] {
			seen[b.Digest] = true
			out = append(out, b)
		}
	}
	return out, nil
}

// Put streams r into the store: pieces go to a staging area as they are
// read and hashed, then move under the file's digest in one transaction.
// Memory stays near two pieces whatever the size.
func (s *PGStore) Put(ctx context.Context, db Beginner, r io.Reader) (File, error) {
	upload := newUploadID()
	defer db.Exec(context.WithoutCancel(ctx), `DELETE FROM library_staging WHERE upload_id = $1`, upload)
	h := blake3.New(32, nil)
	buf := make([]byte, PieceSize)
	var size int64
	n := 0
	for ; ; n++ {
		k, err := io.ReadFull(r, buf)
		if k > 0 || n == 0 {
			h.Write(buf[:k])
			size += int64(k)
			if err := s.stage(ctx, db, upload, s.c.encode(n, buf[:k])); err != nil {
				return File{}, err
			}
		}
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			if k > 0 || n == 0 {
				n++
			}
			break
		}
		if err != nil {
			return File{}, fmt.Errorf("put: read: %w", err)
		}
	}
	f := File{Digest: DigestPrefix + hex.EncodeToString(h.Sum(nil)), Size: size, Pieces: n}
	return f, s.commitStaged(ctx, db, upload, f)
}

func (s *PGStore) stage(ctx context.Context, q DB, upload string, p piece) error {
	_, err := q.Exec(ctx, `INSERT INTO library_staging (upload_id, idx, size, encoding, hash, data) VALUES ($1, $2, $3, $4, $5, $6)`,
		upload, p.idx, p.size, p.encoding, p.hash, p.data)
	if err != nil {
		return fmt.Errorf("put: stage piece %d: %w", p.idx, err)
	}
	s.m.bytes.WithLabelValues("put").Add(float64(p.size))
	return nil
}

func (s *PGStore) commitStaged(ctx context.Context, db Beginner, upload string, f File) error {
	tx, err := db.Begin(ctx)
	if err != nil {
		return fmt.Errorf("put %s: %w", f.Digest, err)
	}
	defer tx.Rollback(ctx)
	tag, err := tx.Exec(ctx, `INSERT INTO library_files (digest, size, pieces, piece_size) VALUES ($1, $2, $3, $4)
		ON CONFLICT DO NOTHING`, f.Digest, f.Size, f.Pieces, PieceSize)
	if err != nil {
		return fmt.Errorf("put %s: %w", f.Digest, err)
	}
	if tag.RowsAffected() == 0 {
		s.m.files.WithLabelValues("deduplicated").Inc()
		return nil // already stored: the staged pieces are dropped
	}
	if _, err := tx.Exec(ctx, `INSERT INTO library_pieces (digest, idx, size, encoding, hash, data)
		SELECT $2, idx, size, encoding, hash, data FROM library_staging WHERE upload_id = $1`, upload, f.Digest); err != nil {
		return fmt.Errorf("put %s: move pieces: %w", f.Digest, err)
	}
	s.m.files.WithLabelValues("stored").Inc()
	return tx.Commit(ctx)
}

func newUploadID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// Stat describes a stored file.
func (s *PGStore) Stat(ctx context.Context, q DB, digest string) (File, error) {
	f := File{Digest: digest}
	err := q.QueryRow(ctx, `SELECT size, pieces FROM library_files WHERE digest = $1`, digest).Scan(&f.Size, &f.Pieces)
	if errors.Is(err, pgx.ErrNoRows) {
		return f, fmt.Errorf("stat %s: %w", digest, ErrNotFound)
	}
	if err != nil {
		return f, fmt.Errorf("stat %s: %w", digest, err)
	}
	return f, nil
}

// ReadRange streams bytes [off, off+n) of a file to w, verifying each piece
// before writing it, and the whole file's digest when all of it is read.
func (s *PGStore) ReadRange(ctx context.Context, q DB, digest string, off, n int64, w io.Writer) error {
	f, err := s.Stat(ctx, q, digest)
	if err != nil {
		return err
	}
	if n < 0 || off+n > f.Size {
		n = f.Size - off
	}
	if off < 0 || n < 0 {
		return fmt.Errorf("read %s: range %d+%d: %w", digest, off, n, ErrRange)
	}
	whole := off == 0 && n == f.Size
	var h *blake3.Hasher
	if whole {
		h = blake3.New(32, nil)
		w = io.MultiWriter(w, h)
	}
	if err := s.readPieces(ctx, q, f, off, n, w); err != nil {
		return err
	}
	if whole && DigestPrefix+hex.EncodeToString(h.Sum(nil)) != digest {
		s.m.corrupt.Inc()
		return fmt.Errorf("read %s: %w", digest, ErrCorrupt)
	}
	return nil
}

func (s *PGStore) readPieces(ctx context.Context, q DB, f File, off, n int64, w io.Writer) error {
	first, last := int(off/PieceSize), int((off+n-1)/PieceSize)
	if n == 0 {
		last = first - 1
	}
	rows, err := q.Query(ctx, `SELECT idx, size, encoding, hash, data FROM library_pieces
		WHERE digest = $1 AND idx BETWEEN $2 AND $3 ORDER BY idx`, f.Digest, first, last)
	if err != nil {
		return fmt.Errorf("read %s: %w", f.Digest, err)
	}
	defer rows.Close()
	want := first
	for rows.Next() {
		var p piece
		if err := rows.Scan(&p.idx, &p.size, &p.encoding, &p.hash, &p.data); err != nil {
			return fmt.Errorf("read %s: %w", f.Digest, err)
		}
		raw, err := s.checked(f.Digest, p, want)
		if err != nil {
			return err
		}
		lo := max(off-int64(p.idx)*PieceSize, 0)
		hi := min(off+n-int64(p.idx)*PieceSize, int64(len(raw)))
		if _, err := w.Write(raw[lo:hi]); err != nil {
			return fmt.Errorf("read %s: write: %w", f.Digest, err)
		}
		s.m.bytes.WithLabelValues("get").Add(float64(hi - lo))
		want++
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read %s: %w", f.Digest, err)
	}
	if want != last+1 {
		s.m.corrupt.Inc()
		return fmt.Errorf("read %s: piece %d missing: %w", f.Digest, want, ErrCorrupt)
	}
	return nil
}

func (s *PGStore) checked(digest string, p piece, want int) ([]byte, error) {
	if p.idx != want {
		s.m.corrupt.Inc()
		return nil, fmt.Errorf("read %s: piece %d missing: %w", digest, want, ErrCorrupt)
	}
	raw, err := s.c.decode(digest, p)
	if err != nil {
		s.m.corrupt.Inc()
		return nil, err
	}
	return raw, nil
}

// Get reads a whole file into memory, verified.
func (s *PGStore) Get(ctx context.Context, q DB, digest string) ([]byte, error) {
	var buf bytesBuffer
	if err := s.ReadRange(ctx, q, digest, 0, -1, &buf); err != nil {
		return nil, err
	}
	return buf.b, nil
}

type bytesBuffer struct{ b []byte }

func (w *bytesBuffer) Write(p []byte) (int, error) {
	w.b = append(w.b, p...)
	return len(p), nil
}
