-- spine's first schema: the session recorder, the work spine, projector
-- checkpoints and dead letters (the Library's tables are in 002). Every row here is a
-- projection of the JetStream log and can be rebuilt by replaying it, so no
-- column takes its value from now(): times come from the envelopes.

CREATE TABLE projector_checkpoints (
    name     text PRIMARY KEY,
    last_seq bigint NOT NULL
);

-- The seed's v1:worker:appSession.
CREATE TABLE sessions (
    id                 text PRIMARY KEY,
    org                text NOT NULL,
    member             text NOT NULL,
    app                text NOT NULL,
    kind               text NOT NULL,
    level              text NOT NULL DEFAULT '',
    app_session_ref    text NOT NULL DEFAULT '',
    workspace          text NOT NULL DEFAULT '',
    plan_id            text NOT NULL DEFAULT '',
    task_id            text NOT NULL DEFAULT '',
    step_id            text NOT NULL DEFAULT '',
    parent_run_id      text NOT NULL DEFAULT '',
    worker_id          text NOT NULL DEFAULT '',
    prompt_digest      text NOT NULL DEFAULT '',
    status             text NOT NULL,
    session_run_id     text NOT NULL,
    transcript_file_id text NOT NULL DEFAULT '',
    recorded_steps     integer NOT NULL DEFAULT 0,
    observation_count  integer NOT NULL DEFAULT 0,
    dropped_actions    integer NOT NULL DEFAULT 0,
    last_seq           bigint NOT NULL DEFAULT 0,
    exit_code          integer,
    error              text NOT NULL DEFAULT '',
    model              text NOT NULL DEFAULT '',
    effort             text NOT NULL DEFAULT '',
    usage              jsonb,
    total_cost         numeric,
    billing            text NOT NULL DEFAULT '',
    door               text NOT NULL DEFAULT '',
    started_at         timestamptz NOT NULL,
    ended_at           timestamptz,
    updated_at         timestamptz NOT NULL
);
CREATE INDEX sessions_owner ON sessions (org, member, started_at DESC);
CREATE INDEX sessions_live_worker ON sessions (worker_id) WHERE ended_at IS NULL;

-- Prose chunks (stdout/stderr), live-readable while the session runs.
CREATE TABLE session_chunks (
    session_id text NOT NULL,
    seq        bigint NOT NULL,
    stream     text NOT NULL CHECK (stream IN ('stdout', 'stderr')),
    text       text NOT NULL,
    at         timestamptz NOT NULL,
    PRIMARY KEY (session_id, seq)
);

-- The work spine: runs, steps, observations.
CREATE TABLE runs (
    id             text PRIMARY KEY,
    kind           text NOT NULL,
    org            text NOT NULL,
    member         text NOT NULL,
    session_id     text NOT NULL DEFAULT '',
    parent_run_id  text NOT NULL DEFAULT '',
    parent_step_id text NOT NULL DEFAULT '',
    created_at     timestamptz NOT NULL
);
CREATE INDEX runs_parent ON runs (parent_run_id, parent_step_id) WHERE parent_run_id <> '';

CREATE TABLE steps (
    run_id      text NOT NULL,
    idx         integer NOT NULL,
    id          text NOT NULL UNIQUE,
    action      text NOT NULL,
    source      text NOT NULL,           -- 'session' (an event chunk) or 'mcp' (the MCP node)
    session_seq bigint,                  -- the chunk seq, for session-sourced steps
    call_id     text NOT NULL DEFAULT '',
    detail      jsonb NOT NULL,
    at          timestamptz NOT NULL,
    PRIMARY KEY (run_id, idx)
);
CREATE UNIQUE INDEX steps_call ON steps (run_id, call_id) WHERE call_id <> '';

CREATE TABLE observations (
    run_id  text NOT NULL,
    idx     integer NOT NULL,
    step_id text NOT NULL DEFAULT '',
    kind    text NOT NULL,               -- result, note, control
    body    jsonb NOT NULL,
    at      timestamptz NOT NULL,
    PRIMARY KEY (run_id, idx)
);

-- Bad input, with the reason. data is the message as received, redacted.
CREATE TABLE dead_letters (
    stream  text NOT NULL,
    seq     bigint NOT NULL,
    subject text NOT NULL,
    reason  text NOT NULL,
    detail  text NOT NULL,
    data    bytea NOT NULL,
    at      timestamptz NOT NULL,
    PRIMARY KEY (stream, seq)
);
