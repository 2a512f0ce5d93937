package telemetry

import (
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"strings"
)

// DefaultMaxBytes bounds a body, decompressed, when ReadBody is given no
// limit: the OpenTelemetry Collector's default (confighttp's
// max_request_body_size), so an exporter that works against a Collector
// works against spine. Codex's one metrics export of a short run is about
// 0.8 MB of JSON.
const DefaultMaxBytes = 20 << 20

// ReserveStep is how many bytes ReadBody reads, decompressed, between two
// calls of ReadOpts.Reserve.
const ReserveStep = 64 << 10

// ReadOpts are ReadBody's options; nil means the defaults.
type ReadOpts struct {
	// Max bounds the body once decompressed; zero or less means
	// DefaultMaxBytes.
	Max int64
	// Reserve, when set, is asked for room before each ReserveStep bytes
	// are read, decompressed: n is the bytes the body will hold once they
	// are. false stops the read with ErrNoRoom. A door holds the body's
	// weight in its in-flight budget this way as it grows, so a small gzip
	// body cannot decompress to 20 MiB before the budget is asked.
	Reserve func(n int64) bool
}

func (o *ReadOpts) max() int64 {
	if o == nil || o.Max <= 0 {
		return DefaultMaxBytes
	}
	return o.Max
}

// ReadBody reads an OTLP/HTTP body, gunzipping it when contentEncoding
// says gzip, and refuses one over the bound once decompressed, so a small
// compressed body cannot expand without bound. An unknown encoding is
// ErrEncoding, an oversize body ErrTooLarge, a broken gzip stream
// ErrMalformed, a refused reservation ErrNoRoom.
func ReadBody(r io.Reader, contentEncoding string, opts *ReadOpts) ([]byte, error) {
	max := opts.max()
	switch strings.ToLower(strings.TrimSpace(contentEncoding)) {
	case "", "identity":
		return readAtMost(reserving(r, opts), max)
	case "gzip", "x-gzip":
		return gunzip(r, max, opts)
	}
	return nil, ErrEncoding
}

// gunzip decompresses r, at most max bytes of it compressed or not.
func gunzip(r io.Reader, max int64, opts *ReadOpts) ([]byte, error) {
	zr, err := gzip.NewReader(io.LimitReader(r, max+1))
	if err != nil {
		return nil, &MalformedError{Layer: "gzip", err: err}
	}
	defer zr.Close()
	b, err := readAtMost(reserving(zr, opts), max)
	if err != nil && !errors.Is(err, ErrTooLarge) && !errors.Is(err, ErrNoRoom) {
		return nil, &MalformedError{Layer: "gzip", err: err}
	}
	return b, err
}

// readAtMost reads r to its end, or fails with ErrTooLarge past max bytes.
func readAtMost(r io.Reader, max int64) ([]byte, error) {
	var buf bytes.Buffer
	n, err := buf.ReadFrom(io.LimitReader(r, max+1))
	if err != nil {
		return nil, err
	}
	if n > max {
		return nil, ErrTooLarge
	}
	return buf.Bytes(), nil
}

// reserving is r read under opts.Reserve, or r itself without one.
func reserving(r io.Reader, opts *ReadOpts) io.Reader {
	if opts == nil || opts.Reserve == nil {
		return r
	}
	return &reserved{r: r, reserve: opts.Reserve}
}

// reserved reads at most what it holds room for, and asks for the next
// ReserveStep once that is read.
type reserved struct {
	r          io.Reader
	reserve    func(int64) bool
	read, room int64
}

func (b *reserved) Read(p []byte) (int, error) {
	if b.read == b.room {
		if !b.reserve(b.room + ReserveStep) {
			return 0, ErrNoRoom
		}
		b.room += ReserveStep
	}
	n, err := b.r.Read(p[:min(int64(len(p)), b.room-b.read)])
	b.read += int64(n)
	return n, err
}
