-- Who the apps' telemetry is (docs/telemetry.md#identity). An org admin maps
-- what an app says of its user (user.email, user.account_uuid or
-- user.account_id, user.id) to a member; an org's ingest token records each
-- event as the member its identity maps to. What an ingest token's events
-- carried and no mapping names is counted in telemetry_unmapped, shown to the
-- admins (spine members unmapped) until it is mapped. Both are configuration
-- the admin API writes, not projections: spine rebuild leaves them alone.
CREATE TABLE member_identities (
    org       text NOT NULL,
    kind      text NOT NULL CHECK (kind IN ('email', 'account', 'user')),
    value     text NOT NULL,
    member    text NOT NULL,
    mapped_by text NOT NULL,
    mapped_at timestamptz NOT NULL,
    PRIMARY KEY (org, kind, value)
);

CREATE TABLE telemetry_unmapped (
    org        text NOT NULL,
    kind       text NOT NULL CHECK (kind IN ('email', 'account', 'user')),
    value      text NOT NULL,
    first_seen timestamptz NOT NULL,
    last_seen  timestamptz NOT NULL,
    events     bigint NOT NULL,
    PRIMARY KEY (org, kind, value)
);
