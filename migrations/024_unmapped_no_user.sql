-- An ingest token's events that named no user (every hook, Codex with a
-- provider's API key) and were of a session no member of the org holds are
-- counted too (docs/telemetry.md#who-the-caller-is): under kind machine (the
-- machine, as the session's workerId) when the app named one, else kind none
-- with the app as the value. Nothing maps them; they are listed so that the
-- admins see what was not recorded.
ALTER TABLE telemetry_unmapped DROP CONSTRAINT telemetry_unmapped_kind_check,
    ADD CONSTRAINT telemetry_unmapped_kind_check CHECK (kind IN ('email', 'account', 'user', 'machine', 'none'));
