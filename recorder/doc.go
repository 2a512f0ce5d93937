// Package recorder applies the app-session rules to the session stream and
// writes the projections: the session row (one per app session),
// its recording run with one step and one observation per completed action,
// live prose chunks, and at the end one content-addressed transcript file.
//
// The rules, each with a test in this package:
//
//   - the app set is closed (claude-code, codex); kinds are run, open,
//     attach; level embeddings is refused;
//   - chunk seq is monotonic per session: a chunk not after the last is
//     dropped and not counted, silently when it repeats a seq recorded,
//     dead-lettered out_of_order when its seq fell in a hole; a hole is
//     recorded as a note observation and counted in droppedActions;
//   - an event chunk becomes one step plus one observation in the session's
//     run and counts in recordedSteps; MCP calls come from the MCP node's
//     records, and submit and next_task are protocol, never work;
//   - a worker disconnect ends every live session on that worker with a
//     named error; model and effort are what the app reported;
//   - a session silent for the idle timeout ends timeout, and one still
//     running a grace after its cancel ends cancelled: the Sweeper publishes
//     their session.end to the log, deciding by the time JetStream stored
//     the session's last envelope (kept on the row), never the producer's at,
//     and the recorder applies such an end only if that time still holds;
//   - credentials in content are redacted before anything is stored;
//   - a session id is held by the first owner to start it (session_owners:
//     ClaimSessions at the HTTP door, and again when a start is projected);
//     a start for an id another owner holds is a duplicate_start;
//   - a rejection names whose dead letter it is: a start's own owner, else
//     the owner of the session the message was for;
//   - the apps' own telemetry (session.telemetry) creates the session it
//     names when nobody holds the id (origin telemetry; another owner's id
//     is session_exists): its requests are a ledger counted once each
//     (session_requests), its usage, cost and model the ledger's, a tool's
//     post one step keyed by the tool use id, its end or its quiet
//     (TelemetryIdle) the end, done; a later start of its owner makes it
//     that door's session (docs/recording.md#telemetry-sessions).
//
// A Recorder is a streams.Handler: a projector hands it a batch inside one
// transaction and it returns a rejection for each message that breaks a
// rule, which the projector dead-letters.
//
//	rec := recorder.New(recorder.Config{Registerer: reg})
//	p, err := streams.NewProjector(streams.ProjectorConfig{Name: "recorder",
//		Stream: streams.StreamSessions, Handler: rec, Pool: pool, JS: js})
package recorder
