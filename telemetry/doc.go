// Package telemetry reads the apps' own telemetry and makes envelopes of
// it: the OpenTelemetry logs and metrics Claude Code and Codex export over
// OTLP/HTTP when an admin switches it on, and the JSON Claude Code's http
// hooks post (docs/telemetry.md says how to switch each on, what each app
// sends, and what each door records).
//
// A body goes through three steps, each refusing what it cannot take with
// an error a door answers with a 4xx: FormatOf (ErrContentType, 415),
// ReadBody (ErrEncoding 415, ErrTooLarge 413; ErrNoRoom when the door's
// in-flight budget, asked through ReadOpts.Reserve as the body
// decompresses, has no room: 429), DecodeLogs or DecodeMetrics
// (ErrTooManyRecords 413, ErrMalformed 400). Then Events flattens the logs
// and Translate makes each event spine records a session.telemetry
// envelope:
//
//	f, err := telemetry.FormatOf(r.Header.Get("Content-Type"))
//	...
//	b, err := telemetry.ReadBody(r.Body, r.Header.Get("Content-Encoding"), &telemetry.ReadOpts{Reserve: hold})
//	...
//	logs, err := telemetry.DecodeLogs(b, f)
//	...
//	for _, e := range telemetry.Events(logs) {
//		env, err := telemetry.Translate(e, time.Now())
//		switch {
//		case err != nil: // ErrUnknownApp, ErrNoSession: refused
//		case env == nil: // an event spine records nothing of
//		default:
//			env.Owner = owner(e.Identities()) // the door's: the caller, or the member an admin mapped
//			publish(env)
//		}
//	}
//
// # Decoding
//
// The decoders fill the official OTLP types in their slim build
// (go.opentelemetry.io/proto/slim/otlp: the same generated messages, the
// collector's requests and responses among them, without gRPC), as
// LogsData and MetricsData, which are the export requests' twins on the
// wire. Before anything is decoded a scan counts the export's records (or
// data points) and values and refuses one past MaxRecords or MaxValues: an
// empty record is two bytes of protobuf. JSON goes through protojson
// first; what real exporters send and the spec does not allow is mended
// rather than refused: integers as JSON numbers (Claude Code) or strings
// (Codex), trace and span ids in hex (the spec, and Codex) or base64
// (generic protobuf encoders), null bodies, "0" times, scalars given as {}
// ({"doubleValue":{}}), bools as strings. Fields OTLP does not define are
// dropped. A malformed body's error never quotes it: a body holds what the
// app logged.
//
// # Events and envelopes
//
// Events flattens a logs request into one Event per log record: its name
// as the app documents it ("claude_code.api_request", "codex.sse_event"),
// its session (Claude Code's session.id, Codex's conversation.id), when it
// happened, and its attributes as Attrs, whose accessors read a number
// whether the app sent it as an int, a double or a string — the apps mix
// all three, sometimes for one attribute. Identities is what an event
// says of its user (user.email, user.account_uuid or user.account_id,
// user.id), in the order package members maps them.
//
// Translate is the contract's table (docs/telemetry.md, the envelope): a
// model request, a tool result or a prompt becomes a session.telemetry of
// kind request, tool or prompt, in the session spine collect gives the
// app's session, its id a hash of what tells it apart so a re-sent export
// is stored once, its names cut to their bounds. DecodeHook reads a hook's
// body and Hook.Envelope makes the same kinds of it, and an end. Neither
// sets the owner (the door's) nor redacts (the publisher does).
//
// Points counts a metrics export's data points by app: spine takes the
// apps' metrics so their exporters do not retry, and projects none of it
// (the logs carry the same numbers per request).
//
//	d, err := telemetry.DecodeMetrics(b, f)
//	...
//	for app, n := range telemetry.Points(d) { // "claude-code", "codex", or "" for another
//		pointsTotal.WithLabelValues(cmp.Or(app, "other")).Add(float64(n))
//	}
//
// The HTTP doors and who the caller is are package server's.
package telemetry
