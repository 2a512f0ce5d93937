-- The sessions page (/ui/sessions, docs/ui.md) lists a caller's sessions
-- newest first, a page at a time by the keyset (started_at, id): a member's
-- from sessions_member_started, an admin's whole org from
-- sessions_org_started, each page a range of one index whatever the table's
-- size. Its "N running now" count, its running filter and its event stream
-- read the running sessions from sessions_running, which holds only those.
-- id is ordered bytewise (COLLATE "C"), as the page's cursor compares it.
-- started_at and org/member never change after the start, so the chunks'
-- updates of a session stay HOT; ended_at changes once, at the end, where
-- sessions_live_worker already makes the update a new tuple.
CREATE INDEX sessions_member_started ON sessions (org, member, started_at, id COLLATE "C");
CREATE INDEX sessions_org_started ON sessions (org, started_at, id COLLATE "C");
CREATE INDEX sessions_running ON sessions (org, member, started_at, id COLLATE "C") WHERE ended_at IS NULL;
