// Package apps is the closed set of apps spine records, Claude Code and
// Codex, and the translation of each app's own output into spine's
// version-1 envelopes: a start, stdout chunks for prose, event chunks for
// actions (commands, file reads and writes with content, fetches, MCP
// calls), and an end with the usage, model and cost the output reported.
// Nothing is computed that the output did not report: billing is what the
// output says of itself (or Options.Billing), a cost absent from it stays
// absent. The importer drives it over files (package importer); live
// capture drives it over an app's output as it is written.
//
// Formats: claude-stream-json (`claude -p --output-format stream-json`,
// a JSON array of its events, or `--output-format json`),
// claude-transcript (~/.claude/projects/<project>/<session>.jsonl),
// codex-exec-json (`codex exec --json`) and codex-rollout
// (~/.codex/sessions/…/rollout-*.jsonl). Detect tells a source's format
// from its first values; NewRecordReader splits it into records (JSON
// lines, or the values of a pretty-printed document or array).
//
// A Translator holds every session its sources hold: a Stream per source
// takes its records one at a time (Stream.Record), publishes envelopes to
// the Sink as they come, and the Translator says what it knows of each
// session at its end (Options.Ended). One session can span sources, so
// what is remembered across them (sessions, responses counted, lines seen)
// is the Translator's.
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
// again in another, and a line (by uuid) already translated into a session is
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
// One session can be in a transcript and a stream-json log at once: when
// the transcript is read first (the importer reads transcripts and
// rollouts before one-file output), a stream-json line the transcript had
// (by uuid) is passed over like a transcript's own repeat.
//
// # Bounded memory
//
// Memory grows with sessions and responses, never with bytes, and no text
// is kept once published. Responses, lines and tool calls are remembered by
// 8-byte keys (see Key for the collision odds); a response's other snapshots
// are weighed against the one counted while it is among the last
// recentResponses counted.
// Transcript and rollout sessions stay open to Translator.Finish (a later
// source may continue them); stream-json and exec sessions are ended by
// Translator.EndIdle once more than Bounds.MaxOpenOneFile are open, and a
// later record of one is skipped and reported. A one-file session's
// envelopes are held back until it ends (see Translator.hold), so the
// recorder writes it in one batch; with Options.Live (an app's output read
// while it runs) they are published as they come, and Stream.Exit gives
// the end the process's exit code.
//
// # Usage convention
//
// The envelopes carry the app's buckets (streams.Usage, which the
// translation also sums in), where inputTokens never includes cached
// tokens: Claude's input_tokens as reported; Codex's input_tokens minus
// cached_input_tokens. cacheReadTokens is Claude's cache_read_input_tokens
// or Codex's cached_input_tokens; cacheWriteTokens is Claude's
// cache_creation_input_tokens (Codex reports none); outputTokens is as
// reported (Codex's includes reasoning); reasoningTokens is Codex's
// reasoning_output_tokens, a part of outputTokens. Reports count in
// accounting.Tokens (input includes cache reads and writes;
// docs/counting.md).
// usage.raw is {"format", "reports": [the app's own reports, verbatim]}: the
// result lines' usage, modelUsage and total_cost_usd (stream-json), every
// turn.completed usage (codex exec), the last token_count info (rollouts);
// transcripts have no session report, so their list is empty.
//
// # Deterministic ids
//
// A session's id is the app's own (SessionID makes it subject-safe) and
// every envelope's id is a hash of the app, the session and its place in it
// ("start", "end", or the chunk's seq). Before a session's first envelope
// the Sink says what spine already holds: a session recorded and ended is
// passed over up to where it ended, and what the output holds past that is
// a continuation, a new spine session (see continuation.go, ContinuationID);
// one started but not ended resumes after its last recorded seq; so
// translating the same output again publishes nothing the recorder would
// store twice or dead-letter, however long after. With Options.NewOutput
// (a new process's output) a session spine holds is continued instead of
// read again. With Options.Live a started session's usage so far is
// published as it changes (session.usage), and Translator.EndQuiet ends the
// sessions a caller says are idle.
//
// Example, one source read by hand:
//
//	tr := apps.NewTranslator(apps.Options{Owner: owner, Sink: sink})
//	st := tr.Stream(apps.Source{Path: path, ModTime: mtime, Format: apps.FormatClaudeTranscript})
//	rr := apps.NewRecordReader(bufio.NewReader(f))
//	for {
//		rec, err := rr.Next() // io.EOF at the end; a *LineError skips one record unless Fatal
//		if err != nil {
//			break
//		}
//		if _, err := st.Record(ctx, rec); err != nil {
//			return err
//		}
//	}
//	if err := st.Done(ctx); err != nil {
//		return err
//	}
//	return tr.Finish(ctx) // ends every session, each reported to Options.Ended
package apps
