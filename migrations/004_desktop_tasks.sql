-- Desktop tasks and remoteSession (docs/design.md#desktop-tasks). desktop_tasks,
-- desktop_task_events, desktop_runners and remote_sessions are projections of
-- the SPINE_TASKS stream (projector "tasks"): no column takes now(), times
-- come from the messages. runner_tokens is not a projection: it is the list
-- of runner credentials a member minted and may revoke.

CREATE TABLE desktop_tasks (
    id                 text PRIMARY KEY,
    org                text NOT NULL,
    member             text NOT NULL,
    kind               text NOT NULL,
    remote_session_id  text NOT NULL,
    runner_id          text NOT NULL DEFAULT '',   -- pinned or chosen machine; '' = any of the member's runners
    title              text NOT NULL DEFAULT '',
    instructions       text NOT NULL,              -- the prompt: stored, never logged
    local_session_id   text NOT NULL DEFAULT '',   -- the desktop's own session, when known
    state              text NOT NULL CHECK (state IN ('queued', 'claimed', 'running', 'done', 'interrupted', 'expired', 'cancelled')),
    deliver_by         timestamptz,
    fence              bigint NOT NULL DEFAULT 0,  -- stream sequence of the winning claim
    claimed_by         text NOT NULL DEFAULT '',
    lease_expires_at   timestamptz,
    cancel_requested   boolean NOT NULL DEFAULT false,
    last_event_seq     bigint NOT NULL DEFAULT 0,  -- the runner's per-task event seq
    last_seq           bigint NOT NULL,            -- stream sequence of the last message on the task's subject
    error              text NOT NULL DEFAULT '',
    receipt_id         text NOT NULL DEFAULT '',
    created_at         timestamptz NOT NULL,
    updated_at         timestamptz NOT NULL,
    ended_at           timestamptz
);
CREATE INDEX desktop_tasks_queued ON desktop_tasks (org, member, created_at) WHERE state = 'queued';
CREATE INDEX desktop_tasks_leased ON desktop_tasks (lease_expires_at) WHERE state IN ('claimed', 'running');
CREATE INDEX desktop_tasks_deliver_by ON desktop_tasks (deliver_by) WHERE state = 'queued' AND deliver_by IS NOT NULL;
CREATE INDEX desktop_tasks_session ON desktop_tasks (remote_session_id, created_at);

-- What the runner posted (and the prompt that started each task, kind
-- 'prompt'), in log order: remoteSession.read's transcript.
CREATE TABLE desktop_task_events (
    remote_session_id text NOT NULL,
    pos               bigint NOT NULL,             -- 1, 2, 3… per remote session: read's cursor
    task_id           text NOT NULL,
    seq               bigint NOT NULL,             -- per task; 0 for the prompt
    kind              text NOT NULL,
    text              text NOT NULL DEFAULT '',
    data              jsonb,
    at                timestamptz NOT NULL,
    PRIMARY KEY (remote_session_id, pos)
);

CREATE TABLE desktop_runners (
    id                  text PRIMARY KEY,
    org                 text NOT NULL,
    member              text NOT NULL,
    machine             text NOT NULL,
    apps                jsonb NOT NULL,
    capabilities        jsonb NOT NULL,
    protocol_version    integer NOT NULL,
    execution_targets   jsonb NOT NULL,
    registered_at       timestamptz NOT NULL,
    last_seen           timestamptz NOT NULL
);
CREATE INDEX desktop_runners_owner ON desktop_runners (org, member, last_seen DESC);

CREATE TABLE remote_sessions (
    id                text PRIMARY KEY,
    org               text NOT NULL,
    member            text NOT NULL,
    target            text NOT NULL,
    title             text NOT NULL DEFAULT '',
    runner_id         text NOT NULL DEFAULT '',
    local_session_id  text NOT NULL DEFAULT '',
    latest_task_id    text NOT NULL,
    state             text NOT NULL,
    tasks             integer NOT NULL DEFAULT 0,
    events            bigint NOT NULL DEFAULT 0,  -- transcript entries so far (the last pos)
    version           bigint NOT NULL,            -- stream sequence of the last change
    created_at        timestamptz NOT NULL,
    last_activity_at  timestamptz NOT NULL
);
CREATE INDEX remote_sessions_owner ON remote_sessions (org, member, last_activity_at DESC);

CREATE TABLE runner_tokens (
    id          text PRIMARY KEY,                 -- the token's jti
    org         text NOT NULL,
    member      text NOT NULL,
    runner_id   text NOT NULL,
    created_at  timestamptz NOT NULL,
    expires_at  timestamptz NOT NULL,
    revoked_at  timestamptz
);
CREATE INDEX runner_tokens_owner ON runner_tokens (org, member, created_at DESC);

-- Which member a runnerId belongs to: the first to mint a token for it. Not
-- a projection. Its primary key settles two members minting one id at once.
CREATE TABLE runner_owners (
    runner_id   text PRIMARY KEY,
    org         text NOT NULL,
    member      text NOT NULL,
    created_at  timestamptz NOT NULL
);
