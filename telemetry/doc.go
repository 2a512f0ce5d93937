// Package telemetry reads the apps' own telemetry: the OpenTelemetry logs
// and metrics Claude Code and Codex export over OTLP/HTTP when an admin
// switches it on (docs/telemetry.md says how, and what each app sends).
//
// A body goes through three steps, each refusing what it cannot take with
// an error a door can answer with a 4xx: FormatOf (ErrContentType, 415),
// ReadBody (ErrEncoding 415, ErrTooLarge 413), DecodeLogs or DecodeMetrics
// (ErrMalformed, 400).
//
//	f, err := telemetry.FormatOf(r.Header.Get("Content-Type"))
//	...
//	b, err := telemetry.ReadBody(r.Body, r.Header.Get("Content-Encoding"), 0)
//	...
//	logs, err := telemetry.DecodeLogs(b, f)
//	...
//	for _, e := range telemetry.Events(logs) {
//		switch e.Name {
//		case "claude_code.api_request":
//			id, _ := e.Attrs.Str("request_id")
//			cost, _ := e.Attrs.Float("cost_usd")
//			...
//		}
//	}
//
// # Decoding
//
// The decoders fill the official OTLP types (go.opentelemetry.io/proto/otlp)
// from application/x-protobuf or application/json, gunzipped when the
// request says gzip, within a size bound that holds after decompression.
// JSON goes through protojson first; what real exporters send and the spec
// does not allow is mended rather than refused: integers as JSON numbers
// (Claude Code) or strings (Codex), trace and span ids in hex (the spec,
// and Codex) or base64 (generic protobuf encoders), null bodies, "0"
// times, scalars given as {} ({"doubleValue":{}}), bools as strings.
// Fields OTLP does not define are dropped. A malformed body's error never
// quotes it: a body holds what the app logged.
//
// # Events
//
// Events flattens a logs request into one Event per log record: its name
// as the app documents it ("claude_code.api_request", "codex.sse_event"),
// its session (Claude Code's session.id, Codex's conversation.id), when it
// happened, and its attributes as Attrs, whose accessors read a number
// whether the app sent it as an int, a double or a string — the apps mix
// all three, sometimes for one attribute.
//
// What an event becomes (a session, a router-call row, a step) is the
// projection's business, not this package's; so are the HTTP doors and
// who the caller is.
package telemetry
