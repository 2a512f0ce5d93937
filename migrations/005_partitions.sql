-- Partitioned projection (SPINE_PARTITIONS): each session records the
-- partition its messages are projected in, so a worker disconnect — which
-- every partition sees — ends only the partition's own live sessions.
ALTER TABLE sessions ADD COLUMN partition integer NOT NULL DEFAULT 0;
CREATE INDEX sessions_live_worker_partition ON sessions (worker_id, partition) WHERE ended_at IS NULL;
