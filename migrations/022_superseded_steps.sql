-- Telemetry steps a door's start superseded (docs/recording.md#telemetry-sessions):
-- a start over a telemetry session deletes its telemetry steps other than
-- MCP calls, which the door records again, and moves their count from
-- recorded_steps here. A step's idx is recorded_steps + superseded_steps,
-- so the door's steps come after every step the run ever had. Rows from
-- before this migration took none back.
ALTER TABLE sessions ADD COLUMN superseded_steps integer NOT NULL DEFAULT 0;
