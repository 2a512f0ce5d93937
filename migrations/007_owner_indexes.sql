-- GET /v1/sessions lists a member's sessions by id, a page at a time
-- (spine import asks it which sessions are recorded before it publishes).
-- It replaces sessions_owner (org, member, started_at), which no query
-- used. artifacts_owner (org, member) goes too: every read of an artifact
-- comes by id, session or digest, and without statistics (autovacuum off)
-- the planner could take it for a read by id and walk the member's
-- artifacts. Every index is paid for on each of the recorder's inserts.
DROP INDEX sessions_owner;
DROP INDEX artifacts_owner;
CREATE INDEX sessions_owner_id ON sessions (org, member, id);
