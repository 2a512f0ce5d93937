-- A router call's machine: the session's workerId (the machine `spine
-- collect` ran on, a desktop runner's id), so cost reports group by
-- machine as they group by member. '' when the start named none.
-- The accounting projector writes it from the session's start; rows from
-- before this migration take it from accounting_sessions, where the
-- projector kept it since 003 (every router call has its session there),
-- so the column is what a rebuild from the log writes.
ALTER TABLE router_calls ADD COLUMN worker_id text NOT NULL DEFAULT '';
UPDATE router_calls r SET worker_id = a.worker_id
FROM accounting_sessions a
WHERE a.session_id = r.session_id AND a.worker_id <> '';

-- cost_days groups by machine too. It is a function of router_calls (006),
-- so it is made again rather than altered: the same columns, worker_id
-- among the grouping ones, and the rows the projector would have written
-- (a rebuild reproduces them byte for byte).
DROP TABLE cost_days;
CREATE TABLE cost_days (
    org                text   NOT NULL,
    day                date   NOT NULL,  -- the UTC date of router_calls.at
    billing            text   NOT NULL,
    app                text   NOT NULL,
    served_model       text   NOT NULL,
    member             text   NOT NULL,
    plan_id            text   NOT NULL,
    worker_id          text   NOT NULL,  -- the machine; '' = none named
    calls              bigint NOT NULL,
    calls_with_usage   bigint NOT NULL,
    calls_with_cost    bigint NOT NULL,
    input_tokens       bigint NOT NULL,
    output_tokens      bigint NOT NULL,
    cache_read_tokens  bigint NOT NULL,
    cache_write_tokens bigint NOT NULL,
    reasoning_tokens   bigint NOT NULL,
    cost               numeric,
    PRIMARY KEY (org, day, billing, app, served_model, member, plan_id, worker_id)
);

INSERT INTO cost_days (org, day, billing, app, served_model, member, plan_id, worker_id, calls, calls_with_usage,
    calls_with_cost, input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, reasoning_tokens, cost)
SELECT org, (at AT TIME ZONE 'UTC')::date, billing, app, served_model, member, plan_id, worker_id,
    count(*), count(usage), count(total_cost),
    least(coalesce(sum(input_tokens), 0), 9223372036854775807)::bigint,
    least(coalesce(sum(output_tokens), 0), 9223372036854775807)::bigint,
    least(coalesce(sum(cache_read_tokens), 0), 9223372036854775807)::bigint,
    least(coalesce(sum(cache_write_tokens), 0), 9223372036854775807)::bigint,
    least(coalesce(sum(reasoning_tokens), 0), 9223372036854775807)::bigint,
    sum(total_cost)
FROM router_calls
GROUP BY 1, 2, 3, 4, 5, 6, 7, 8;
