package library

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/klauspost/compress/zstd"
)

// TestPieceWindowHoldsAPiece: the codec's small window finds a match as far
// back as a piece allows and stores the bytes zstd's default window would.
func TestPieceWindowHoldsAPiece(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 17))
	raw := make([]byte, PieceSize)
	for i := range raw[:PieceSize/2] {
		raw[i] = byte(r.IntN(256))
	}
	// The piece's last quarter repeats its first, three quarters of a piece back.
	copy(raw[PieceSize/2:], bytes.Repeat([]byte("spine "), PieceSize/24))
	copy(raw[3*PieceSize/4:], raw[:PieceSize/4])

	def, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedDefault), zstd.WithEncoderConcurrency(1))
	if err != nil {
		t.Fatal(err)
	}
	defer def.Close()
	c := newCodec()
	p := c.encode(0, raw)
	if want := def.EncodeAll(raw, nil); !bytes.Equal(p.data, want) {
		t.Fatalf("piece is %d bytes, the default window's %d: not the same bytes", len(p.data), len(want))
	}
	// Random bytes do not compress: the half a piece of them is stored
	// once, and the repeat only if the window reaches back to it.
	if p.encoding != "zstd" || len(p.data) > PieceSize/2+PieceSize/16 {
		t.Fatalf("piece encoded %s in %d bytes: the repeat three quarters back was not found", p.encoding, len(p.data))
	}
	got, err := c.decode("test", p)
	if err != nil || !bytes.Equal(got, raw) {
		t.Fatalf("round trip: %v", err)
	}
}
