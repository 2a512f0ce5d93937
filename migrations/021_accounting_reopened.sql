-- A session a start reopened (docs/accounting.md#telemetry-sessions): its
-- telemetry had ended it, and written its router-call row, before a door
-- (spine collect, spine run) started it. It runs again as that door's
-- (origin ''), and its next end writes the row again instead of adding a
-- second. Rows from before this migration were never reopened.
ALTER TABLE accounting_sessions ADD COLUMN reopened boolean NOT NULL DEFAULT false;
