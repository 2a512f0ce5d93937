// Package server is spine's HTTP API: ingest for producers that do not
// speak NATS, and the reads served from the projections.
//
//	GET  /healthz /readyz /metrics                   liveness, readiness (names a stuck projector), Prometheus
//
//	POST /v1/ingest                                  a batch of envelopes → 207, one result each
//	POST /otlp/v1/logs                               an OTLP/HTTP logs export (protobuf, JSON; gzip) → OTLP's success or partial success
//	POST /otlp/v1/metrics                            an OTLP/HTTP metrics export → counted, not projected
//	POST /v1/hooks/claude-code                       one Claude Code http hook → 200 {} within HookDeadline
//	GET  /v1/sessions                                ?after=&limit=&member= the caller's sessions by id (an admin: a member's): lastSeq, ended
//	GET  /v1/sessions/{id}                           the session row (an admin: any of the org's)
//	GET  /v1/sessions/{id}/transcript                ?since=&limit= a bounded page of prose (an admin: as the row)
//	POST /v1/sessions/{id}/cancel                    the owner's cancel → 202
//	GET  /v1/runs/{id}/steps                         ?since=&limit= steps with their observations (an admin: as the row); a plan run's: its steps' sessions
//	GET  /ui/                                        → /ui/sessions, keeping the query (the quickstart's ?token=)
//	GET  /ui/assets/{file}                           the pages' stylesheet and script (?v= their hash: cached for good)
//	GET  /ui/sessions                                ?app=&machine=&member=&status=&billing=&day=&plan=&before= the sessions page, live
//	GET  /ui/sessions/events                         the page's change notifications
//	GET  /v1/deadletters                             ?after=&limit= the caller's dead letters (an admin's: the org's)
//	POST   /v1/members/identities                    map an app's identity (email, account, user) to a member (admins)
//	GET    /v1/members/identities                    ?after=&limit= the org's mappings (admins)
//	DELETE /v1/members/identities                    ?kind=&value= unmap one (admins)
//	GET    /v1/members/unmapped                      ?after=&limit= identities an ingest token brought that no mapping names, and what named no user (admins)
//	GET  /v1/deadletters/{stream}/{seq}              one, with the message as stored
//	GET  /ui/sessions/{id}                           ?after=&steps= a recorded session's page (an admin: the org's)
//	GET  /ui/sessions/{id}/transcript|steps|artifacts ?after= the page's next page of each, or its live tail
//	GET  /ui/sessions/{id}/events                    the page's change notifications, until the session's end
//	GET  /ui/files/{digest}                          /v1/library/files/{digest} with a page's sign-in, as a download
//	GET  /ui/deadletters                             ?after= the same list as a page
//	GET  /ui/deadletters/{stream}/{seq}              one as a page, its message as text (64 KiB of it)
//
//	POST /v1/library/uploads                         ?name=&contentType= stream a file into the Library
//	GET  /v1/library/files/{digest}                  a file's bytes (Range supported)
//	GET  /v1/provenance/{id}                         the trace of a digest, artifact or session, or a plan (run) down to its sessions
//	GET  /ui/provenance                              ?id= the trace's search form
//	GET  /ui/provenance/{id}                         the trace as a page
//	GET  /ui/plans/{id}                              a plan run or plan from the top down, as a page
//
//	GET  /v1/cost/summary                            ?from=&to=&groupBy=&limit=&after= calls, tokens, dollars by billing
//	GET  /v1/plans/{id}/spend                        where a plan stands
//	POST /v1/plans/{id}/budget                       set a plan's budget (admins) → 202
//	GET  /ui/cost                                    the cost report as a page
//
//	POST   /v1/desktop-runner/tokens                 mint a runner token (member)
//	GET    /v1/desktop-runner/tokens                 list them
//	DELETE /v1/desktop-runner/tokens/{id}            revoke one
//	POST /v1/desktop-runner/register                 a runner's inventory (runner token, as below)
//	GET  /v1/desktop-runner/work                     queued tasks for this runner
//	GET  /v1/desktop-runner/events                   server-sent events: work_available
//	POST /v1/desktop-runner/tasks/{id}/claim         → fence and lease, or 409 already_claimed
//	POST /v1/desktop-runner/tasks/{id}/heartbeat     → lease validity, cancelRequested
//	POST /v1/desktop-runner/tasks/{id}/events        the runner's ordered events
//	POST /v1/desktop-runner/tasks/{id}/complete      → a durable receipt
//	POST /v1/remote-sessions                         remoteSession.create
//	GET  /v1/remote-sessions                         remoteSession.list
//	GET  /v1/remote-sessions/{id}                    ?since=&limit= remoteSession.read
//	POST /v1/remote-sessions/{id}/messages           remoteSession.send
//	POST /v1/remote-sessions/{id}/cancel             remoteSession.cancel
//	GET  /ui/remote                                  ?after= the caller's remote sessions and runners, live
//	GET  /ui/remote/events                           the list's change notifications
//	GET  /ui/remote/{id}                             a remote session's live page
//	GET  /ui/remote/{id}/events                      the page's change notifications
//	     /mcp                                        the MCP endpoint (package gateway)
//
// The desktop routes and /mcp exist only when the server has a desktop
// service (Config.Desktop), as a node always does. docs/ingest.md,
// docs/accounting.md and docs/desktop.md describe each answer.
//
// Every /v1 route but the runner's and the hooks' needs a member bearer
// token and is scoped to its org and member: another member's session answers exactly
// as a missing one does. An org admin's token reads the org's where its
// pages show the org: a recorded session, its transcript and its
// recording run's steps, the dead letters, the cost summary and a plan's
// spend (docs/security.md#roles-member-and-admin); another org's are
// always the missing one's 404. Runner routes take a runner token instead;
// the telemetry doors (/otlp/v1/…, /v1/hooks/…) a member's token or an
// org's ingest token, which records each event as the member an admin
// mapped its identity to (docs/telemetry.md), and answer as OTLP/HTTP
// does. A /ui page also takes the cookie it sets once from ?token=; its markup comes
// from server/pages, like every HTML spine serves.
// Errors are {"error":{"code","message"}} with a 4xx or 5xx status.
//
// Ingest deduplicates within the caller's own envelope ids, and a session
// id belongs to the first owner to start it: a start for an id another
// owner holds is 409 session_exists, and anything else for a session the
// caller does not hold is the 404 unknown_session of one never started.
//
// Every request body is read under Limits: a minimum rate after a grace
// (408 body_too_slow, the connection closed), a process-wide budget of
// bytes in flight weighted by what decoding them costs (429 busy), and on
// ingest each org's quota of bytes and envelopes per second (429
// quota_exceeded); both 429s carry Retry-After. Requests without a body,
// the event streams among them, are under none of these. The pages' event
// streams have caps of their own (8 open a member, 1,000 in all: 429
// too_many_streams) and end when the HTTP server shuts down
// (CloseStreams, its shutdown hook).
package server
