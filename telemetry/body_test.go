package telemetry_test

import (
	"bytes"
	"compress/gzip"
	"errors"
	"strings"
	"testing"

	"github.com/spinehq/spine/telemetry"
)

func TestFormatOf(t *testing.T) {
	for ct, want := range map[string]telemetry.Format{
		"application/x-protobuf":          telemetry.Protobuf,
		"application/json":                telemetry.JSON,
		"application/json; charset=utf-8": telemetry.JSON,
		"Application/JSON":                telemetry.JSON,
	} {
		if f, err := telemetry.FormatOf(ct); err != nil || f != want {
			t.Errorf("%q: %v, %v; want %v", ct, f, err, want)
		}
	}
	for _, ct := range []string{"", "text/plain", "application/grpc", "application/x-protobuf;;"} {
		if _, err := telemetry.FormatOf(ct); !errors.Is(err, telemetry.ErrContentType) {
			t.Errorf("%q: %v, want ErrContentType", ct, err)
		}
	}
}

func gzipped(t *testing.T, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestReadBodyBound: the bound holds after decompression, so a small gzip
// body cannot expand past it; a body of exactly the bound is read.
func TestReadBodyBound(t *testing.T) {
	const max = 1 << 16
	exact := bytes.Repeat([]byte("a"), max)
	for name, tc := range map[string]struct {
		body     []byte
		encoding string
		err      error
	}{
		"exact":             {exact, "", nil},
		"exact gzip":        {gzipped(t, exact), "gzip", nil},
		"one over":          {append(exact, 'a'), "identity", telemetry.ErrTooLarge},
		"bomb":              {gzipped(t, make([]byte, 64*max)), "gzip", telemetry.ErrTooLarge},
		"broken gzip":       {[]byte("\x1f\x8b not really"), "gzip", telemetry.ErrMalformed},
		"truncated gzip":    {gzipped(t, exact)[:100], "gzip", telemetry.ErrMalformed},
		"zstd":              {exact, "zstd", telemetry.ErrEncoding},
		"gzip not declared": {gzipped(t, []byte("{}")), "", nil},
	} {
		b, err := telemetry.ReadBody(bytes.NewReader(tc.body), tc.encoding, &telemetry.ReadOpts{Max: max})
		if !errors.Is(err, tc.err) || err == nil && len(b) == 0 {
			t.Errorf("%s: %d bytes, %v; want %v", name, len(b), err, tc.err)
		}
	}
}

// TestGzipCaptures: Claude Code's gzip bodies (OTEL_EXPORTER_OTLP_COMPRESSION
// =gzip) read to the JSON they compress.
func TestGzipCaptures(t *testing.T) {
	for _, c := range captures(t, "claude-code-json-gzip-") {
		if c.ContentEncoding != "gzip" || !strings.HasPrefix(string(c.body), `{"resource`) {
			t.Errorf("%s: encoding %q, body %.20q", c.File, c.ContentEncoding, c.body)
		}
	}
}

// TestDefaultBound: no limit given is DefaultMaxBytes.
func TestDefaultBound(t *testing.T) {
	over := bytes.NewReader(make([]byte, telemetry.DefaultMaxBytes+1))
	if _, err := telemetry.ReadBody(over, "", nil); !errors.Is(err, telemetry.ErrTooLarge) {
		t.Fatalf("%v, want ErrTooLarge", err)
	}
}

// TestReadBodyReserves: the reader is asked for room before each
// ReserveStep bytes are decompressed, not once the body is read, so a
// gzip body that grows is stopped where the room ends (ErrNoRoom); with
// room enough it reads whole.
func TestReadBodyReserves(t *testing.T) {
	const room = 3 * telemetry.ReserveStep
	body := gzipped(t, make([]byte, 10*telemetry.ReserveStep))
	var asked []int64
	reserve := func(n int64) bool {
		asked = append(asked, n)
		return n <= room
	}
	_, err := telemetry.ReadBody(bytes.NewReader(body), "gzip", &telemetry.ReadOpts{Reserve: reserve})
	if !errors.Is(err, telemetry.ErrNoRoom) || len(asked) != 4 || asked[3] != room+telemetry.ReserveStep {
		t.Fatalf("%v after asking %v; want ErrNoRoom once past %d", err, asked, room)
	}
	asked = nil
	b, err := telemetry.ReadBody(bytes.NewReader(body), "gzip", &telemetry.ReadOpts{Reserve: func(n int64) bool {
		asked = append(asked, n)
		return true
	}})
	if err != nil || len(b) != 10*telemetry.ReserveStep || len(asked) != 11 {
		t.Fatalf("%d bytes, %v, asked %d times; want the whole body, 11 asks", len(b), err, len(asked))
	}
}
