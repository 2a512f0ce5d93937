-- sessions_task (010) served reads by a session's taskId; since 011 a task's
-- sessions are found through desktop_task_sessions and sessions by its key
-- (docs/desktop.md#reading), so nothing reads by it and each write to
-- sessions paid for it.
DROP INDEX IF EXISTS sessions_task;
