-- A telemetry session the idle sweeper ended (docs/telemetry.md): quiet for
-- SPINE_TELEMETRY_IDLE is how one without hooks ends, but an interactive
-- session can be quiet that long (its user away, a long command) and go on.
-- Its telemetry other than a request then runs it again, in the recorder
-- (sessions) as in accounting (accounting_sessions), and its next end
-- writes its router-call row again. Rows from before this migration are
-- never reopened so.
ALTER TABLE sessions ADD COLUMN swept boolean NOT NULL DEFAULT false;
ALTER TABLE accounting_sessions ADD COLUMN swept boolean NOT NULL DEFAULT false;
