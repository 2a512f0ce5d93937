-- GET /v1/sessions lists a member's sessions by id, a page at a time
-- (spine import asks it which sessions are recorded before it publishes).
CREATE INDEX sessions_owner_id ON sessions (org, member, id);
