-- A plan's trace (trace.OfPlan: GET /v1/provenance/{id}, GET
-- /v1/runs/{id}/steps for a plan run, spine trace) reads a member's sessions
-- by the plan run they served (parent_run_id) or the plan they carry
-- (plan_id). Partial: a session that names neither, most of them, costs the
-- recorder's insert nothing here.
CREATE INDEX sessions_plan_run ON sessions (org, member, parent_run_id) WHERE parent_run_id <> '';
CREATE INDEX sessions_plan ON sessions (org, member, plan_id) WHERE plan_id <> '';
