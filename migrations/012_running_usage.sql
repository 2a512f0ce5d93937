-- A session's usage so far as its producer last reported it (session.usage),
-- kept by accounting while the session runs: an end the producer did not
-- send — the idle sweeper's, a worker disconnect — carries no usage, and
-- its router-call row takes this one instead (docs/counting.md). NULL: none
-- reported. A rebuild from the log fills the same values.
ALTER TABLE accounting_sessions ADD COLUMN usage jsonb, ADD COLUMN total_cost numeric;
