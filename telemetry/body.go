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

// ReadBody reads an OTLP/HTTP body, gunzipping it when contentEncoding
// says gzip, and refuses one over max bytes once decompressed (zero or
// less means DefaultMaxBytes), so a small compressed body cannot expand
// without bound. An unknown encoding is ErrEncoding, an oversize body
// ErrTooLarge, a broken gzip stream ErrMalformed.
func ReadBody(r io.Reader, contentEncoding string, max int64) ([]byte, error) {
	if max <= 0 {
		max = DefaultMaxBytes
	}
	switch strings.ToLower(strings.TrimSpace(contentEncoding)) {
	case "", "identity":
		return readAtMost(r, max)
	case "gzip", "x-gzip":
		return gunzip(r, max)
	}
	return nil, ErrEncoding
}

// gunzip decompresses r, at most max bytes of it compressed or not.
func gunzip(r io.Reader, max int64) ([]byte, error) {
	zr, err := gzip.NewReader(io.LimitReader(r, max+1))
	if err != nil {
		return nil, &MalformedError{Layer: "gzip", err: err}
	}
	defer zr.Close()
	b, err := readAtMost(zr, max)
	if err != nil && !errors.Is(err, ErrTooLarge) {
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
