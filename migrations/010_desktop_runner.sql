-- A real desktop runner (docs/desktop.md). A runner may end a task it holds
-- as refused (it asks more than the runner's owner allows) or failed (its app
-- died), so those are two more final states. A task may declare the app and
-- the workspace it needs, which the runner checks against its config; both
-- are '' for every task queued before this migration, as a rebuild gives.
ALTER TABLE desktop_tasks DROP CONSTRAINT desktop_tasks_state_check;
ALTER TABLE desktop_tasks ADD CONSTRAINT desktop_tasks_state_check CHECK (state IN
    ('queued', 'claimed', 'running', 'done', 'interrupted', 'expired', 'cancelled', 'refused', 'failed'));
ALTER TABLE desktop_tasks ADD COLUMN app text NOT NULL DEFAULT '', ADD COLUMN workspace text NOT NULL DEFAULT '';

-- remoteSession.read serves a task's transcript from the sessions recorded
-- with its taskId: found by this index.
CREATE INDEX sessions_task ON sessions (task_id) WHERE task_id <> '';
