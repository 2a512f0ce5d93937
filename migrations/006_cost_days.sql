-- cost_days: router calls rolled up per UTC day, kept by the accounting
-- projector in the transaction that writes the calls, so cost reports over
-- whole days read a few rows per day instead of every call. Its grouping
-- columns answer every summary but groupBy=session: day, week and month from
-- day, and app, model, billing, member and plan from their columns.
--
-- Each row adds up the calls of its group as the report over router_calls
-- would: calls_with_usage and calls_with_cost count the calls whose app
-- reported usage or a cost; token sums cover the calls that reported usage
-- and saturate at the largest bigint (as the report does, so saturating
-- early changes no answer); cost is the exact numeric sum of the reported
-- costs (its scale the largest of theirs), NULL when none reported one.
CREATE TABLE cost_days (
    org                text   NOT NULL,
    day                date   NOT NULL,  -- the UTC date of router_calls.at
    billing            text   NOT NULL,
    app                text   NOT NULL,
    served_model       text   NOT NULL,
    member             text   NOT NULL,
    plan_id            text   NOT NULL,
    calls              bigint NOT NULL,
    calls_with_usage   bigint NOT NULL,
    calls_with_cost    bigint NOT NULL,
    input_tokens       bigint NOT NULL,
    output_tokens      bigint NOT NULL,
    cache_read_tokens  bigint NOT NULL,
    cache_write_tokens bigint NOT NULL,
    reasoning_tokens   bigint NOT NULL,
    cost               numeric,
    PRIMARY KEY (org, day, billing, app, served_model, member, plan_id)
);

-- A session listing (groupBy=session) pages in session id order, bytewise
-- (COLLATE "C", whatever the database's collation): a page reads its rows
-- from here, never the whole window.
CREATE INDEX router_calls_org_session ON router_calls (org, session_id COLLATE "C");

-- A database that already holds router calls gets their rollup here: it is
-- a function of router_calls, the same rows the projector would have
-- written (a rebuild reproduces them byte for byte).
INSERT INTO cost_days
SELECT org, (at AT TIME ZONE 'UTC')::date, billing, app, served_model, member, plan_id,
    count(*), count(usage), count(total_cost),
    least(coalesce(sum(input_tokens), 0), 9223372036854775807)::bigint,
    least(coalesce(sum(output_tokens), 0), 9223372036854775807)::bigint,
    least(coalesce(sum(cache_read_tokens), 0), 9223372036854775807)::bigint,
    least(coalesce(sum(cache_write_tokens), 0), 9223372036854775807)::bigint,
    least(coalesce(sum(reasoning_tokens), 0), 9223372036854775807)::bigint,
    sum(total_cost)
FROM router_calls
GROUP BY 1, 2, 3, 4, 5, 6, 7;
