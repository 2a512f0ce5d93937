// Package importer turns real Claude Code and Codex output into spine's
// version-1 envelopes, so history that never went through a cockpit is
// recorded like a live session: a start, stdout chunks for prose, event
// chunks for actions (commands, file reads and writes with content,
// fetches, MCP calls), and an end with the usage, model and cost the file
// reported. Nothing is computed that the file did not report: billing is
// what the file says of itself (or the person importing), a cost absent
// from the file stays absent.
//
// Formats (one file each): claude-stream-json (`claude -p --output-format
// stream-json`, a JSON array of its events, or `--output-format json`),
// claude-transcript (~/.claude/projects/<project>/<session>.jsonl),
// codex-exec-json (`codex exec --json`) and codex-rollout
// (~/.codex/sessions/…/rollout-*.jsonl). A file's format is told from its
// first values unless Options.Format names it.
//
// # One record per model response
//
// Claude Code writes one line per content block, each repeating the
// message's id and requestId; a response is counted once, under (message.id,
// requestId), with its final usage: the snapshot with the most output
// (earlier lines carry a partial output_tokens), whatever order its lines are
// read in and however often (split copies of one session, each a prefix of
// it, repeat earlier lines; see supersedes). A resumed session repeats earlier lines in
// another file: a response already counted in one session is not counted
// again in another, and a line (by uuid) already imported into a session is
// passed over. Codex rollouts re-emit token_count with an unchanged running
// total: a response is counted when the total changes, and a session's usage
// is its last total_token_usage. codex exec --json's turn.completed is the
// thread's running total too (after `codex exec resume` it includes the
// earlier runs'): a session's usage is its last one, never a sum.
// A Claude stream-json session's usage is what its result lines report
// (see claudeRuns): each process's last modelUsage, which covers every
// thread (a Task subagent's responses are not in result.usage, and mostly
// not in the output at all), summed over the processes.
//
// One session can be in a transcript and a stream-json log at once:
// transcripts (and rollouts) are read before one-file output whatever the
// order of the paths, and a stream-json line the transcript had (by uuid)
// is passed over like a transcript's own repeat.
//
// # Bounded memory
//
// Memory grows with sessions and responses, never with bytes, and no text
// is kept once published. Responses, lines and tool calls are remembered by
// 8-byte keys (see key for the collision odds); a response's other snapshots
// are weighed against the one counted while it is among the last
// recentResponses counted.
// Transcript and rollout sessions stay open to the end of the import (a
// later file may continue them); stream-json and exec sessions are ended
// once more than maxOpenOneFile are open, and a later record of one is
// skipped and reported. Summary.PerSession lists at most MaxSessionsListed
// sessions unless Options.AllSessions.
//
// # Usage convention
//
// The Summary counts tokens as every report does (accounting.Tokens: input
// includes cache reads and writes; docs/counting.md). The envelopes carry
// the app's buckets (streams.Usage), where inputTokens never includes
// cached tokens: Claude's input_tokens as reported; Codex's input_tokens
// minus cached_input_tokens. cacheReadTokens
// is Claude's cache_read_input_tokens or Codex's cached_input_tokens;
// cacheWriteTokens is Claude's cache_creation_input_tokens (Codex reports
// none); outputTokens is as reported (Codex's includes reasoning);
// reasoningTokens is Codex's reasoning_output_tokens, a part of outputTokens.
// usage.raw is {"format", "reports": [the app's own reports, verbatim]}: the
// result lines' usage, modelUsage and total_cost_usd (stream-json), every
// turn.completed usage (codex exec), the last token_count info (rollouts);
// transcripts have no session report, so their list is empty.
//
// # Deterministic ids and re-import
//
// A session's id is the app's own (SessionID makes it subject-safe) and
// every envelope's id is a hash of the app, the session and its place in it
// ("start", "end", or the chunk's seq). Before a session's first envelope
// the Sink says what spine already holds: a session recorded and ended is
// skipped whole; one started but not ended (an interrupted import) resumes
// after its last recorded seq; so re-importing the same files publishes
// nothing the recorder would store twice or dead-letter, however long after.
//
// Example:
//
//	sink, _ := importer.NewJetStreamSink(ctx, js)
//	sum, err := importer.Import(ctx, []string{"~/.claude/projects"},
//		importer.Options{Owner: streams.Owner{Org: "acme", Member: "alice"}, Sink: sink})
package importer
