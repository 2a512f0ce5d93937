-- Tenancy: who holds a session id, and whose each dead letter is.

-- The owner holding each session id. HTTP ingest inserts the claim before it
-- publishes a session.start, so of two owners racing for one id exactly one
-- holds it (the primary key settles it) and the other is answered 409
-- session_exists; chunks, controls and ends for an id the caller does not
-- hold are refused at the door. The recorder inserts the claim too when it
-- projects a start, so a rebuilt database holds the claim of every recorded
-- session. A claim whose start never reached the log (its publish failed)
-- exists only here: the table is not a projection and not in the rebuild
-- checksum.
CREATE TABLE session_owners (
    session_id text PRIMARY KEY,
    org        text NOT NULL,
    member     text NOT NULL
);
INSERT INTO session_owners (session_id, org, member) SELECT id, org, member FROM sessions;

-- Whose a dead letter is: the verified caller of HTTP ingest when the
-- message came that way, else the owner of the session it names, else the
-- owner the message itself names; '' when none is known (only an operator
-- sees those). GET /v1/deadletters reads by these columns.
ALTER TABLE dead_letters
    ADD COLUMN org    text NOT NULL DEFAULT '',
    ADD COLUMN member text NOT NULL DEFAULT '';

-- Rows from before this migration did not keep the caller's headers: they
-- go to the owner of the session their subject names, when it is recorded.
UPDATE dead_letters d SET org = s.org, member = s.member
FROM sessions s
WHERE d.subject ~ '^spine\.(session|mcp)\.[A-Za-z0-9_-]+\.[a-z]+$'
  AND s.id = split_part(d.subject, '.', 3);

CREATE INDEX dead_letters_member ON dead_letters (org, member, stream, seq) WHERE org <> '';
CREATE INDEX dead_letters_org ON dead_letters (org, stream, seq) WHERE org <> '';

-- A top-level text field of a dead letter's message, or NULL when the
-- message is not a JSON object (a dead letter is often malformed): the
-- listing reads type, id and sessionId without carrying whole messages
-- (up to 1 MiB each) out of the database.
CREATE FUNCTION dead_letter_field(data bytea, field text) RETURNS text
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $$
BEGIN
    RETURN left(convert_from(data, 'UTF8')::jsonb ->> field, 256);
EXCEPTION WHEN others THEN
    RETURN NULL;
END
$$;
