-- The sweeper ends a running session that went quiet (SPINE_SESSION_IDLE_TIMEOUT)
-- and one whose cancel its producer never answered (SPINE_CANCEL_GRACE), by
-- publishing a session.end to the log. It decides by these two times, which are
-- JetStream's: when it stored the session's last envelope, and when it stored
-- the session's first cancel. They are log times, never the producer's at
-- (imported history carries old ones), so a rebuild reproduces them. Both are
-- kept only while the session runs and are cleared at its end: a row ended
-- before this migration then agrees with its rebuild.
ALTER TABLE sessions ADD COLUMN received_at timestamptz, ADD COLUMN cancel_requested_at timestamptz;
-- A session running when this migration runs gets a full idle window from
-- now: the stored time of its last envelope is not known here, and its
-- updated_at is the producer's clock. This row alone differs from a rebuild
-- until the session ends.
UPDATE sessions SET received_at = now() WHERE ended_at IS NULL;
