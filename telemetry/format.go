package telemetry

import (
	"mime"
	"strings"
)

// Format is how an OTLP/HTTP body is encoded, from its Content-Type.
type Format int

// The two encodings OTLP/HTTP allows.
const (
	// Protobuf is application/x-protobuf: the binary protobuf encoding
	// (Claude Code's http/protobuf, Codex's protocol = "binary").
	Protobuf Format = iota + 1
	// JSON is application/json: OTLP's JSON mapping of the same messages
	// (Claude Code's http/json, Codex's protocol = "json").
	JSON
)

func (f Format) String() string {
	switch f {
	case Protobuf:
		return "protobuf"
	case JSON:
		return "JSON"
	}
	return "unknown"
}

// FormatOf is the format a Content-Type names; parameters (charset) are
// ignored. Anything else is ErrContentType.
func FormatOf(contentType string) (Format, error) {
	mt, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		return 0, ErrContentType
	}
	switch strings.ToLower(mt) {
	case "application/x-protobuf", "application/protobuf":
		return Protobuf, nil
	case "application/json":
		return JSON, nil
	}
	return 0, ErrContentType
}
