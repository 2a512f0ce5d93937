// Package server is spine's HTTP API: ingest for producers that do not
// speak NATS, and the reads served from the projections.
//
//	POST /v1/ingest                        a batch of envelopes → 207, one result each
//	GET  /v1/sessions                      ?after=&limit= the caller's sessions by id: lastSeq, ended
//	GET  /v1/sessions/{id}                 the session row
//	GET  /v1/sessions/{id}/transcript      ?since=&limit= a bounded page of prose
//	GET  /v1/runs/{id}/steps               ?since=&limit= steps with their observations
//	GET  /v1/deadletters                   ?after=&limit= the caller's dead letters (an admin's: the org's)
//	GET  /v1/deadletters/{stream}/{seq}    one, with the message as stored
//	GET  /healthz /readyz /metrics
//
// Every /v1 route needs a member bearer token and is scoped to its org and
// member: another member's session answers exactly as a missing one does.
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
// the event streams among them, are under none of these.
package server
