// Package collect sends every Claude Code and Codex session on a machine
// to spine as the apps write them: `spine collect`.
//
// A Collector tails each project transcript and subagent transcript under
// Claude Code's directory (projects/**/*.jsonl) and each rollout under
// Codex's (sessions/YYYY/MM/DD/rollout-*.jsonl). It wakes on fsnotify's
// reports and polls as the fallback, reads only complete lines (a last
// line without its newline waits for the rest), and feeds them one record
// at a time through the same translation `spine import` uses
// (apps.Translator), so a collected session has the ids an import of the
// same files gives it, and an import afterwards publishes nothing the
// collector sent.
//
// How far each file was sent is kept in a small JSON state file, saved
// atomically once spine accepted the envelopes of the lines before each
// offset, with the order in which ranges of the files' lines were fed (one
// session spans a transcript and its subagents', and its chunks' seq
// numbers follow that order), saved before they are fed. On start-up the
// ranges are translated again in that order, with nothing sent up to each
// file's offset and the rest sent again (spine passes over what it has):
// the translation's numbering and pending tool calls are rebuilt exactly,
// then collection goes on from there, so after a restart or a crash each
// line is stored once. A file found shorter than its offset, or another
// file under its name, is read again from the start (its envelopes have the
// same ids: spine drops them as duplicates, and lines already recorded are
// passed over); a file known deleted has its offset forgotten and spine
// keeps its session. docs/collect.md says what is not handled yet.
//
// Collected sessions are kind attach, with the app's session id as their
// appSessionRef and the machine as their workerId. A session whose files
// have been quiet for Options.Idle is ended with its usage
// (apps.Translator.EndQuiet); what the app writes to it later is a
// continuation, a new spine session with the same appSessionRef
// (docs/collect.md).
//
//	col, err := collect.New(collect.Options{ClaudeDir: home + "/.claude",
//		CodexDir: home + "/.codex", Sink: importer.NewHTTPSink(client, 500)})
//	if err != nil {
//		return err
//	}
//	return col.Run(ctx)
package collect
