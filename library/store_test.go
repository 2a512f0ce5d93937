package library_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"testing"

	"github.com/spinehq/spine/internal/pgtest"
	"github.com/spinehq/spine/library"
)

var ctx = context.Background()

// noise is incompressible deterministic content.
func noise(n int, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, seed+1))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

func TestRoundTripSizes(t *testing.T) {
	pool, _ := pgtest.New(t)
	st := library.NewPGStore(nil)
	cap := library.DefaultFileCap
	for _, n := range []int{0, 1, 63, 64, cap - 1, cap, cap + 1, 3*library.PieceSize + 17} {
		for _, kind := range []string{"noise", "text"} {
			content := noise(n, uint64(n))
			if kind == "text" {
				content = bytes.Repeat([]byte("abc "), n/4+1)[:n]
			}
			// in a transaction, the way sessions store content
			tx, err := pool.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			b := library.NewBlob(content)
			if err := st.PutMany(ctx, tx, []library.Blob{b, b}); err != nil {
				t.Fatalf("%s %d: put: %v", kind, n, err)
			}
			if err := tx.Commit(ctx); err != nil {
				t.Fatal(err)
			}
			got, err := st.Get(ctx, pool, b.Digest)
			if err != nil || !bytes.Equal(got, content) {
				t.Fatalf("%s %d: get %d bytes, %v", kind, n, len(got), err)
			}
			// streamed, the way uploads arrive: the same file, stored once
			f, err := st.Put(ctx, pool, bytes.NewReader(content))
			if err != nil || f.Digest != b.Digest || f.Size != int64(n) {
				t.Fatalf("%s %d: streamed put = %+v, %v", kind, n, f, err)
			}
		}
	}
	var files, staged int
	pool.QueryRow(ctx, `SELECT count(*) FROM library_files`).Scan(&files)
	pool.QueryRow(ctx, `SELECT count(*) FROM library_staging`).Scan(&staged)
	if files != 15 || staged != 0 { // 0 bytes is the same file either way
		t.Fatalf("%d files, %d staged pieces left", files, staged)
	}
}

func TestCompressedWhenSmaller(t *testing.T) {
	pool, _ := pgtest.New(t)
	st := library.NewPGStore(nil)
	text := bytes.Repeat([]byte("the same line of a transcript\n"), 10000)
	f, err := st.Put(ctx, pool, bytes.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	var stored int64
	var encs []string
	rows, _ := pool.Query(ctx, `SELECT encoding, length(data) FROM library_pieces WHERE digest = $1`, f.Digest)
	for rows.Next() {
		var enc string
		var n int64
		rows.Scan(&enc, &n)
		encs, stored = append(encs, enc), stored+n
	}
	if len(encs) != 1 || encs[0] != "zstd" || stored*10 > int64(len(text)) {
		t.Fatalf("encodings %v, %d stored bytes for %d", encs, stored, len(text))
	}
	f2, _ := st.Put(ctx, pool, bytes.NewReader(noise(5000, 9)))
	var enc string
	pool.QueryRow(ctx, `SELECT encoding FROM library_pieces WHERE digest = $1`, f2.Digest).Scan(&enc)
	if enc != "raw" {
		t.Fatalf("incompressible piece stored as %s", enc)
	}
}

func TestHundredMiBStreamed(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: skips the 100 MiB round trip")
	}
	pool, _ := pgtest.New(t)
	st := library.NewPGStore(nil)
	const size = 100 << 20
	src := &patternReader{left: size}
	f, err := st.Put(ctx, pool, src)
	if err != nil || f.Size != size || f.Pieces != 100 {
		t.Fatalf("put = %+v, %v", f, err)
	}
	h := &countingHasher{}
	if err := st.ReadRange(ctx, pool, f.Digest, 0, -1, h); err != nil || h.n != size {
		t.Fatalf("read %d bytes: %v", h.n, err)
	}
	// a range across a piece boundary
	var buf bytes.Buffer
	off := int64(library.PieceSize - 10)
	if err := st.ReadRange(ctx, pool, f.Digest, off, 20, &buf); err != nil {
		t.Fatal(err)
	}
	want := make([]byte, 20)
	(&patternReader{left: size, pos: off}).Read(want)
	if !bytes.Equal(buf.Bytes(), want) {
		t.Fatalf("range = %x, want %x", buf.Bytes(), want)
	}
}

// patternReader yields size bytes of a position-derived pattern without
// holding them.
type patternReader struct{ left, pos int64 }

func (r *patternReader) Read(p []byte) (int, error) {
	if r.left == 0 {
		return 0, io.EOF
	}
	n := min(int64(len(p)), r.left)
	for i := int64(0); i < n; i++ {
		x := uint64(r.pos+i) * 0x9E3779B97F4A7C15
		p[i] = byte(x >> 56)
	}
	r.left -= n
	r.pos += n
	return int(n), nil
}

type countingHasher struct{ n int64 }

func (c *countingHasher) Write(p []byte) (int, error) { c.n += int64(len(p)); return len(p), nil }

func TestCorruptionIsDetectedOnRead(t *testing.T) {
	pool, _ := pgtest.New(t)
	m := library.NewMetrics(nil)
	st := library.NewPGStore(m)
	content := noise(2*library.PieceSize+100, 3)
	f, err := st.Put(ctx, pool, bytes.NewReader(content))
	if err != nil {
		t.Fatal(err)
	}
	// flip one byte of the second piece
	if _, err := pool.Exec(ctx, `UPDATE library_pieces SET data = set_byte(data, 7, get_byte(data, 7) # 1)
		WHERE digest = $1 AND idx = 1`, f.Digest); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Get(ctx, pool, f.Digest); !errors.Is(err, library.ErrCorrupt) {
		t.Fatalf("get corrupt file: %v", err)
	}
	var first bytes.Buffer
	if err := st.ReadRange(ctx, pool, f.Digest, 0, 100, &first); err != nil || !bytes.Equal(first.Bytes(), content[:100]) {
		t.Fatalf("an intact piece must still be readable: %v", err)
	}
	var w bytes.Buffer
	err = st.ReadRange(ctx, pool, f.Digest, library.PieceSize+5, 10, &w)
	if !errors.Is(err, library.ErrCorrupt) || w.Len() != 0 {
		t.Fatalf("range over the bad piece: %v, %d bytes served", err, w.Len())
	}
	// a missing piece too
	pool.Exec(ctx, `DELETE FROM library_pieces WHERE digest = $1 AND idx = 2`, f.Digest)
	if err := st.ReadRange(ctx, pool, f.Digest, 2*library.PieceSize, 10, io.Discard); !errors.Is(err, library.ErrCorrupt) {
		t.Fatalf("missing piece: %v", err)
	}
}

func TestDigestForm(t *testing.T) {
	d := library.Digest([]byte("abc"))
	if _, err := library.ParseDigest(d); err != nil || len(d) != len("blake3:")+64 {
		t.Fatalf("digest %q: %v", d, err)
	}
	for _, bad := range []string{"", "blake3:", "sha256:" + d[7:], d[:70], "blake3:" + string(bytes.ToUpper([]byte(d[7:])))} {
		if _, err := library.ParseDigest(bad); !errors.Is(err, library.ErrBadDigest) {
			t.Errorf("ParseDigest(%q) = %v", bad, err)
		}
	}
}

// PutMany splits a batch's pieces over several statements past a byte
// bound (PostgreSQL refuses a message over 1 GB); every file reads back.
func TestPutManySplitsLargeBatches(t *testing.T) {
	pool, _ := pgtest.New(t)
	defer func(n int) { *library.MaxStatementBytes = n }(*library.MaxStatementBytes)
	*library.MaxStatementBytes = library.PieceSize + 1
	st := library.NewPGStore(nil)
	var blobs []library.Blob
	for i, n := range []int{10, 3*library.PieceSize + 17, library.PieceSize, 0, 2 * library.PieceSize} {
		blobs = append(blobs, library.NewBlob(noise(n, uint64(100+i))))
	}
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.PutMany(ctx, tx, blobs); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	for _, b := range blobs {
		if got, err := st.Get(ctx, pool, b.Digest); err != nil || !bytes.Equal(got, b.Content) {
			t.Fatalf("%s: %d bytes back of %d: %v", b.Digest, len(got), len(b.Content), err)
		}
	}
}
