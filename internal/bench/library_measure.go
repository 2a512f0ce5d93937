package bench

import (
	"bytes"
	"context"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/klauspost/compress/zstd"
	"lukechampine.com/blake3"

	"github.com/spinehq/spine/library"
)

// libraryMeasure runs the Library benchmark's phases on one database.
type libraryMeasure struct {
	pool  *pgxpool.Pool
	store *library.PGStore
	raw   *rawCodec
	log   *slog.Logger
	// rows is library_files' size at the last ANALYZE, changed the files
	// put since, analyzes how many were run.
	rows, changed, analyzes int
}

// Autovacuum's default rule: ANALYZE once 50 rows plus 10% of the table
// have changed since the last one.
const (
	analyzeThreshold   = 50
	analyzeScaleFactor = 0.1
)

// stored notes n files put and runs ANALYZE on the library tables, outside
// any timing, when autovacuum's default rule would. Without statistics the
// planner seq-scans library_files for PutMany's "which of these are
// stored" lookup, a cost that grows with the table; autovacuum keeps a
// running node's statistics current, but a run of a few seconds ends
// before its first pass, and would measure a young, unanalyzed table.
func (m *libraryMeasure) stored(ctx context.Context, n int) error {
	m.changed += n
	if float64(m.changed) <= analyzeThreshold+analyzeScaleFactor*float64(m.rows) {
		return nil
	}
	if _, err := m.pool.Exec(ctx, `ANALYZE library_files, library_pieces`); err != nil {
		return fmt.Errorf("analyze: %w", err)
	}
	m.rows += m.changed
	m.changed = 0
	m.analyzes++
	return nil
}

// timings add up each operation's time over a variant's files.
type timings struct{ put, get, rawPut, rawGet, dedup time.Duration }

// timed adds the time f takes to d.
func timed(d *time.Duration, f func() error) error {
	began := time.Now()
	err := f()
	*d += time.Since(began)
	return err
}

// class measures n files of size bytes, text then random; batch > 0 puts
// them batch files per transaction with PutMany, batch 0 streams each
// through Put.
func (m *libraryMeasure) class(ctx context.Context, n, size, batch int, corpus [][]byte, desc string) (SizeClass, error) {
	var c SizeClass
	var err error
	m.log.Info("library", "files", n, "bytes", size, "content", "text")
	if c.Text, err = m.variant(ctx, n, size, batch, func(seq int) []byte { return textContent(corpus, seq, size) }); err != nil {
		return c, err
	}
	c.Text.Content = desc
	m.log.Info("library", "files", n, "bytes", size, "content", "random")
	if c.Random, err = m.variant(ctx, n, size, batch, func(seq int) []byte { return randomContent(seq, size) }); err != nil {
		return c, err
	}
	c.Random.Content = "random: ChaCha8 output, incompressible (stored raw)"
	return c, nil
}

func (m *libraryMeasure) variant(ctx context.Context, n, size, batch int, gen func(int) []byte) (Variant, error) {
	v := Variant{Files: n, Bytes: int64(n) * int64(size), Check: Check{Files: n}}
	var t timings
	var digests []string
	var err error
	if batch > 0 {
		digests, err = m.small(ctx, n, batch, gen, &t, &v.Check)
	} else {
		digests, err = m.large(ctx, n, gen, &t, &v.Check)
	}
	if err != nil {
		return v, err
	}
	distinct := make(map[string]bool, len(digests))
	for _, d := range digests {
		distinct[d] = true
	}
	v.Check.DistinctDigests = len(distinct)
	if v.Check.Stored, v.StoredBytes, v.OnDiskBytes, err = m.storedSize(ctx, digests); err != nil {
		return v, err
	}
	v.Store = Rates{Put: newRate(v.Bytes, t.put), Get: newRate(v.Bytes, t.get)}
	v.Raw = Rates{Put: newRate(v.Bytes, t.rawPut), Get: newRate(v.Bytes, t.rawGet)}
	v.PutRatio = round(t.rawPut.Seconds() / t.put.Seconds())
	v.GetRatio = round(t.rawGet.Seconds() / t.get.Seconds())
	v.Dedup = newRate(v.Bytes, t.dedup)
	v.StoredRatio = round(float64(v.StoredBytes) / float64(v.Bytes))
	return v, nil
}

// small puts files batch by batch: the raw baseline on the batch, the
// store's PutMany in one transaction, both reads of every file, then the
// same batch put again (deduplicated).
func (m *libraryMeasure) small(ctx context.Context, n, batch int, gen func(int) []byte, t *timings, c *Check) ([]string, error) {
	digests := make([]string, 0, n)
	for start := 0; start < n; start += batch {
		files := make([][]byte, 0, batch)
		for i := start; i < min(start+batch, n); i++ {
			files = append(files, gen(i))
		}
		encoded := make([]rawFile, len(files))
		_ = timed(&t.rawPut, func() error {
			for i, f := range files {
				encoded[i] = m.raw.put(f)
			}
			return nil
		})
		blobs := make([]library.Blob, len(files))
		if err := timed(&t.put, func() error {
			for i, f := range files {
				blobs[i] = library.NewBlob(f)
			}
			return m.putMany(ctx, blobs)
		}); err != nil {
			return nil, err
		}
		for i, f := range files {
			mt := &matcher{want: f}
			if timed(&t.rawGet, func() error { return m.raw.get(encoded[i], mt) }) == nil && mt.ok() {
				c.RawRoundTrips++
			}
			var got []byte
			if err := timed(&t.get, func() (err error) {
				got, err = m.store.Get(ctx, m.pool, blobs[i].Digest)
				return err
			}); err != nil {
				return nil, err
			}
			if bytes.Equal(got, f) {
				c.StoreRoundTrips++
			}
			digests = append(digests, blobs[i].Digest)
		}
		if err := timed(&t.dedup, func() error {
			again := make([]library.Blob, len(files))
			for i, f := range files {
				again[i] = library.NewBlob(f)
			}
			return m.putMany(ctx, again)
		}); err != nil {
			return nil, err
		}
		if err := m.stored(ctx, len(files)); err != nil {
			return nil, err
		}
	}
	return digests, nil
}

func (m *libraryMeasure) putMany(ctx context.Context, blobs []library.Blob) error {
	return pgx.BeginFunc(ctx, m.pool, func(tx pgx.Tx) error { return m.store.PutMany(ctx, tx, blobs) })
}

// large streams files one at a time: the raw baseline, the store's Put,
// both reads streamed into a comparison, then the same file put again.
func (m *libraryMeasure) large(ctx context.Context, n int, gen func(int) []byte, t *timings, c *Check) ([]string, error) {
	digests := make([]string, 0, n)
	for i := range n {
		content := gen(i)
		var enc rawFile
		_ = timed(&t.rawPut, func() error { enc = m.raw.put(content); return nil })
		var f library.File
		if err := timed(&t.put, func() (err error) {
			f, err = m.store.Put(ctx, m.pool, bytes.NewReader(content))
			return err
		}); err != nil {
			return nil, err
		}
		mt := &matcher{want: content}
		if timed(&t.rawGet, func() error { return m.raw.get(enc, mt) }) == nil && mt.ok() {
			c.RawRoundTrips++
		}
		mt = &matcher{want: content}
		if err := timed(&t.get, func() error { return m.store.ReadRange(ctx, m.pool, f.Digest, 0, -1, mt) }); err != nil {
			return nil, err
		}
		if mt.ok() && f.Digest == library.DigestPrefix+hex.EncodeToString(enc.digest[:]) {
			c.StoreRoundTrips++
		}
		if err := timed(&t.dedup, func() error {
			again, err := m.store.Put(ctx, m.pool, bytes.NewReader(content))
			if err == nil && again.Digest != f.Digest {
				err = fmt.Errorf("%w: put twice, digests %s and %s", ErrLibraryMismatch, f.Digest, again.Digest)
			}
			return err
		}); err != nil {
			return nil, err
		}
		digests = append(digests, f.Digest)
		if err := m.stored(ctx, 1); err != nil {
			return nil, err
		}
	}
	return digests, nil
}

// storedSize counts the files stored under digests and their pieces' bytes
// as stored and as PostgreSQL keeps them.
func (m *libraryMeasure) storedSize(ctx context.Context, digests []string) (files int, stored, onDisk int64, err error) {
	err = m.pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM library_files WHERE digest = ANY($1)),
		coalesce(sum(length(data)), 0), coalesce(sum(pg_column_size(data)), 0)
		FROM library_pieces WHERE digest = ANY($1)`, digests).Scan(&files, &stored, &onDisk)
	if err != nil {
		return 0, 0, 0, fmt.Errorf("stored size: %w", err)
	}
	return files, stored, onDisk, nil
}

// transcripts stores the real transcripts and reports their stored/raw
// size; with none to read it returns nil and the reason.
func (m *libraryMeasure) transcripts(ctx context.Context, dir string) (*TranscriptRatio, string, error) {
	root, paths, reason := fixtures(dir)
	if reason != "" {
		return nil, reason, nil
	}
	tr := &TranscriptRatio{Dir: root, Files: len(paths)}
	var blobs []library.Blob
	seen := map[string]bool{}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, fmt.Sprintf("reading %s: %v", p, err), nil
		}
		if bl := library.NewBlob(b); !seen[bl.Digest] {
			seen[bl.Digest] = true
			blobs = append(blobs, bl)
			tr.Bytes += int64(len(b))
		}
	}
	tr.DistinctFiles = len(blobs)
	if err := m.putMany(ctx, blobs); err != nil {
		return nil, "", err
	}
	digests := make([]string, len(blobs))
	for i, bl := range blobs {
		digests[i] = bl.Digest
		got, err := m.store.Get(ctx, m.pool, bl.Digest)
		if err != nil {
			return nil, "", err
		}
		if bytes.Equal(got, bl.Content) {
			tr.RoundTrips++
		}
	}
	var err error
	if _, tr.StoredBytes, tr.OnDiskBytes, err = m.storedSize(ctx, digests); err != nil {
		return nil, "", err
	}
	tr.StoredRatio = round(float64(tr.StoredBytes) / float64(tr.Bytes))
	return tr, "", nil
}

// rawCodec is the baseline: what storing and reading the bytes costs in
// memory, with zstd set up as the store sets it up.
type rawCodec struct {
	enc *zstd.Encoder
	dec *zstd.Decoder
}

func newRawCodec() *rawCodec {
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedDefault), zstd.WithEncoderConcurrency(1),
		zstd.WithWindowSize(library.PieceSize))
	if err != nil {
		panic(err) // only invalid options fail
	}
	dec, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1))
	if err != nil {
		panic(err)
	}
	return &rawCodec{enc: enc, dec: dec}
}

func (c *rawCodec) close() {
	c.enc.Close()
	c.dec.Close()
}

// rawFile is a file's digest and pieces, zstd-compressed when smaller.
type rawFile struct {
	digest [32]byte
	pieces []rawPiece
}

type rawPiece struct {
	data []byte
	zstd bool
}

func (c *rawCodec) put(content []byte) rawFile {
	f := rawFile{digest: blake3.Sum256(content)}
	for off := 0; off == 0 || off < len(content); off += library.PieceSize {
		raw := content[off:min(off+library.PieceSize, len(content))]
		p := rawPiece{data: raw}
		if z := c.enc.EncodeAll(raw, nil); len(z) < len(raw) {
			p.data, p.zstd = z, true
		}
		f.pieces = append(f.pieces, p)
	}
	return f
}

// get writes the file's bytes to w and checks its digest.
func (c *rawCodec) get(f rawFile, w io.Writer) error {
	h := blake3.New(32, nil)
	var buf []byte
	for _, p := range f.pieces {
		raw := p.data
		if p.zstd {
			var err error
			if buf, err = c.dec.DecodeAll(p.data, buf[:0]); err != nil {
				return err
			}
			raw = buf
		}
		h.Write(raw)
		if _, err := w.Write(raw); err != nil {
			return err
		}
	}
	if !bytes.Equal(h.Sum(nil), f.digest[:]) {
		return ErrLibraryMismatch
	}
	return nil
}

// matcher is a writer that checks what is written against want.
type matcher struct {
	want []byte
	off  int
	bad  bool
}

func (m *matcher) Write(p []byte) (int, error) {
	if m.off+len(p) > len(m.want) || !bytes.Equal(p, m.want[m.off:m.off+len(p)]) {
		m.bad = true
	}
	m.off += len(p)
	return len(p), nil
}

func (m *matcher) ok() bool { return !m.bad && m.off == len(m.want) }
