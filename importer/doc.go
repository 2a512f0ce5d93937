// Package importer imports real Claude Code and Codex output into spine,
// so history that never went through a cockpit is recorded like a live
// session: files → apps (the per-app translation into envelopes) → a Sink
// (HTTPSink, spine's HTTP ingest; JetStreamSink, the log directly; or
// nothing, a dry run).
//
// Import lists the files under its paths (directories recursively, in
// lexical order, each once), tells each file's format (apps.Detect, unless
// Options.Format names it), reads transcripts and rollouts before
// stream-json and exec output (see sessionFilesFirst), and feeds every
// record to one apps.Translator, so a session spread over files (a resumed
// session, a subagent's transcript, a stream-json log beside its
// transcript) is one session, each response counted once. A malformed line
// is skipped and reported; only a failing sink or an unreadable path stops
// the import.
//
// # Re-import
//
// Before a session's first envelope the Sink says what spine already holds
// (Sink.Recorded): a session recorded and ended is skipped whole; one
// started but not ended (an interrupted import) resumes after its last
// recorded seq; so re-importing the same files publishes nothing the
// recorder would store twice or dead-letter, however long after.
//
// # Summary
//
// The Summary counts tokens as every report does (accounting.Tokens: input
// includes cache reads and writes; docs/counting.md), per session and per
// UTC day and app. Summary.PerSession lists at most MaxSessionsListed
// sessions unless Options.AllSessions; the totals count them all.
//
// Example:
//
//	sink, _ := importer.NewJetStreamSink(ctx, js)
//	sum, err := importer.Import(ctx, []string{"~/.claude/projects"},
//		importer.Options{Owner: streams.Owner{Org: "acme", Member: "alice"}, Sink: sink})
package importer
