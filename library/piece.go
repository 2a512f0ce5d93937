package library

import (
	"bytes"
	"fmt"

	"github.com/klauspost/compress/zstd"
	"lukechampine.com/blake3"
)

// codec compresses and checks pieces. Its encoder and decoder are safe for
// concurrent use through EncodeAll and DecodeAll.
type codec struct {
	enc *zstd.Encoder
	dec *zstd.Decoder
}

// encoderWindow is the encoder's window: a piece, no more (zstd's default at
// this level is 8 MiB, whose history buffers the encoder kept, 16 MiB, for a
// piece of at most 1 MiB). A piece is compressed in one frame, so no match
// can reach further back than its start: the bytes are those of the default
// window's (TestPieceWindowHoldsAPiece).
const encoderWindow = PieceSize

func newCodec() *codec {
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedDefault), zstd.WithEncoderConcurrency(1),
		zstd.WithWindowSize(encoderWindow))
	if err != nil {
		panic(err) // only invalid options fail
	}
	dec, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(2*PieceSize))
	if err != nil {
		panic(err)
	}
	return &codec{enc: enc, dec: dec}
}

// piece is one stored piece.
type piece struct {
	idx      int
	size     int
	encoding string
	hash     []byte
	data     []byte
}

func pieceHash(raw []byte) []byte {
	sum := blake3.Sum256(raw)
	return sum[:]
}

// encode makes a piece of raw bytes: zstd when that is smaller.
func (c *codec) encode(idx int, raw []byte) piece {
	p := piece{idx: idx, size: len(raw), encoding: "raw", hash: pieceHash(raw), data: append([]byte{}, raw...)}
	if len(raw) >= 64 {
		if z := c.enc.EncodeAll(raw, nil); len(z) < len(raw) {
			p.encoding, p.data = "zstd", z
		}
	}
	return p
}

// decode returns a piece's raw bytes, verified against its hash.
func (c *codec) decode(digest string, p piece) ([]byte, error) {
	raw := p.data
	if p.encoding == "zstd" {
		var err error
		if raw, err = c.dec.DecodeAll(p.data, make([]byte, 0, p.size)); err != nil {
			return nil, fmt.Errorf("piece %d of %s: %w: %v", p.idx, digest, ErrCorrupt, err)
		}
	}
	if len(raw) != p.size || !bytes.Equal(pieceHash(raw), p.hash) {
		return nil, fmt.Errorf("piece %d of %s: %w", p.idx, digest, ErrCorrupt)
	}
	return raw, nil
}

// split cuts content into pieces of PieceSize.
func (c *codec) split(content []byte) []piece {
	var out []piece
	for i := 0; i == 0 || i*PieceSize < len(content); i++ {
		end := min((i+1)*PieceSize, len(content))
		out = append(out, c.encode(i, content[i*PieceSize:end]))
	}
	return out
}
