-- Accounting: one router-call row per session, and plan budgets. Written by
-- the "accounting" projector only, from session starts, ends, worker
-- disconnects and plan.budget events; like every projection, no column takes
-- its value from now().

-- accounting_sessions is accounting's own memory of each session's start
-- (owner, app, plan, worker), so the projector never reads the recorder's
-- tables: the two run independently. ended_at is set when the router-call
-- row is written; a live session is one with ended_at NULL.
CREATE TABLE accounting_sessions (
    session_id text PRIMARY KEY,
    org        text NOT NULL,
    member     text NOT NULL,
    app        text NOT NULL,
    plan_id    text NOT NULL DEFAULT '',
    worker_id  text NOT NULL DEFAULT '',
    started_at timestamptz NOT NULL,
    ended_at   timestamptz
);
CREATE INDEX accounting_sessions_live_worker ON accounting_sessions (worker_id) WHERE ended_at IS NULL;

-- The seed's v1:router:call: exactly one per session, whatever its ending.
-- Token columns follow the OpenTelemetry GenAI convention: input_tokens
-- INCLUDES cache_read_tokens and cache_write_tokens (they are parts of it),
-- output_tokens INCLUDES reasoning_tokens. They are NULL when the app
-- reported no usage; usage keeps the report exactly as it came.
CREATE TABLE router_calls (
    session_id         text PRIMARY KEY,
    org                text NOT NULL,
    member             text NOT NULL,
    app                text NOT NULL,
    plan_id            text NOT NULL DEFAULT '',
    execution_surface  text NOT NULL,                -- cockpit-app:<app>
    door               text NOT NULL DEFAULT '' CHECK (door IN ('', 'app', 'session')),
    status             text NOT NULL,                -- done, failed, cancelled, disconnected, timeout
    billing            text NOT NULL CHECK (billing IN ('metered', 'subscription', 'unknown')),
    billing_signal     text NOT NULL DEFAULT '',     -- what the machine said; '' = silent
    served_model       text NOT NULL DEFAULT '',
    served_effort      text NOT NULL DEFAULT '',
    usage              jsonb,                        -- the app's usage report, verbatim; NULL = none
    input_tokens       bigint,
    output_tokens      bigint,
    cache_read_tokens  bigint,
    cache_write_tokens bigint,
    reasoning_tokens   bigint,
    total_cost         numeric CHECK (total_cost >= 0), -- USD as reported; NULL = not reported, never 0
    started_at         timestamptz NOT NULL,
    at                 timestamptz NOT NULL          -- when the session ended
);
CREATE INDEX router_calls_org_at ON router_calls (org, at);
CREATE INDEX router_calls_plan ON router_calls (org, plan_id) WHERE plan_id <> '';

-- A plan's budget, from its latest plan.budget event. Plans are scoped to an
-- org. NULL means no limit.
CREATE TABLE plan_budgets (
    org            text NOT NULL,
    plan_id        text NOT NULL,
    dollar_ceiling numeric CHECK (dollar_ceiling >= 0), -- counts metered dollars only
    loop_cap       bigint CHECK (loop_cap >= 0),         -- counts every call
    set_by         text NOT NULL,
    set_at         timestamptz NOT NULL,
    PRIMARY KEY (org, plan_id)
);
