-- Telemetry sessions in accounting (docs/accounting.md#telemetry-sessions).
-- A session whose first envelope accounting sees is a session.telemetry
-- (the apps' own OTLP logs or hooks) has origin 'telemetry': its router-call
-- row is made from the requests its telemetry reported. A session.start
-- from another door (spine collect, spine run) makes it that door's
-- (origin ''), and its row that door's end. billing_signal is the last
-- non-empty billing its telemetry named ('' = silent). Rows from before
-- this migration are other doors' sessions: origin ''.
ALTER TABLE accounting_sessions
    ADD COLUMN origin text NOT NULL DEFAULT '' CHECK (origin IN ('', 'telemetry')),
    ADD COLUMN billing_signal text NOT NULL DEFAULT '';

-- router_call_requests: accounting's ledger of the model requests the apps'
-- telemetry reported, one per (session, request id); a copy sent again is
-- the same request and the first copy stays. A telemetry session's
-- router-call row is the sum of its requests; another door's session keeps
-- its requests here without counting them. Tokens follow router_calls'
-- convention (input_tokens INCLUDES the cache reads and writes,
-- output_tokens the reasoning), NULL when the request reported no usage;
-- cost is USD as reported, NULL when not (never 0). Written by the
-- accounting projector only, from the log: a rebuild writes the same rows.
CREATE TABLE router_call_requests (
    session_id         text NOT NULL,
    request_id         text NOT NULL,
    org                text NOT NULL,
    member             text NOT NULL,
    model              text NOT NULL DEFAULT '',
    effort             text NOT NULL DEFAULT '',
    input_tokens       bigint,
    output_tokens      bigint,
    cache_read_tokens  bigint,
    cache_write_tokens bigint,
    reasoning_tokens   bigint,
    cost               numeric CHECK (cost >= 0),
    at                 timestamptz NOT NULL,  -- the request's event time
    PRIMARY KEY (session_id, request_id)
);
