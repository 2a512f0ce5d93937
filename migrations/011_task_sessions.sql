-- The app sessions a runner records for the tasks it holds (docs/desktop.md
-- "Reading"). When spine takes a runner's session.start it first publishes
-- the link on the task's subjects; the tasks projector keeps it only while
-- that runner holds the task, in log order, so every link of a task is in
-- this table before its end. remoteSession.read reads a task's transcript
-- from its linked sessions (a session names a task by taskId alone only
-- from a runner's start), leaves out the runner's assistant_text of a task
-- with a link, and waits for each linked session to end. A session links to
-- one task; pos is its place among the task's links (1, 2, 3… in log
-- order), the order the read serves a task's sessions in and the cursor
-- folds them by. Tasks that ran before this migration have no links: a rebuild
-- of their log gives none either.
CREATE TABLE desktop_task_sessions (
    session_id        text PRIMARY KEY,
    task_id           text NOT NULL,
    remote_session_id text NOT NULL,
    org               text NOT NULL,
    member            text NOT NULL,
    runner_id         text NOT NULL,
    pos               integer NOT NULL,
    at                timestamptz NOT NULL,
    UNIQUE (task_id, pos)
);
CREATE INDEX desktop_task_sessions_remote ON desktop_task_sessions (remote_session_id);
