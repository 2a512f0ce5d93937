-- The apps' own telemetry (docs/telemetry.md): a session.telemetry creates
-- the session it names when no door started it. origin says which made the
-- row: 'telemetry', or '' for a start (collect, run, import, the runner),
-- which a later start of the same owner turns a telemetry session into.
ALTER TABLE sessions ADD COLUMN origin text NOT NULL DEFAULT '';

-- Each model request a session's telemetry reported, once: the first copy
-- of a (session, request) wins, so a re-sent export or a request told by
-- two doors counts once. A telemetry session's usage, cost, model and
-- effort on its row are made from these rows. The token columns are NULL
-- when the request reported no usage, cost when it reported no cost.
CREATE TABLE session_requests (
    session_id         text NOT NULL,
    request_id         text NOT NULL,
    model              text NOT NULL DEFAULT '',
    effort             text NOT NULL DEFAULT '',
    query_source       text NOT NULL DEFAULT '',
    input_tokens       bigint,
    output_tokens      bigint,
    cache_read_tokens  bigint,
    cache_write_tokens bigint,
    reasoning_tokens   bigint,
    cost               numeric,
    duration_ms        bigint,
    at                 timestamptz NOT NULL,
    PRIMARY KEY (session_id, request_id)
);
