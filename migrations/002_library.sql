-- The Library: content-addressed files, their pieces, and artifacts (named
-- references to files with their provenance).

-- A file is named by the BLAKE3-256 digest of its bytes ("blake3:<64 hex>").
-- Its bytes are stored in pieces of piece_size raw bytes (the last may be
-- shorter), so no row and no read needs the whole file.
CREATE TABLE library_files (
    digest     text PRIMARY KEY,
    size       bigint NOT NULL,
    pieces     integer NOT NULL,
    piece_size integer NOT NULL
);

-- One piece: zstd-compressed when that is smaller, raw otherwise. hash is
-- the BLAKE3-256 of the piece's raw bytes, checked before a piece is served.
CREATE TABLE library_pieces (
    digest   text NOT NULL,
    idx      integer NOT NULL,
    size     integer NOT NULL,
    encoding text NOT NULL CHECK (encoding IN ('raw', 'zstd')),
    hash     bytea NOT NULL,
    data     bytea NOT NULL,
    PRIMARY KEY (digest, idx)
);

-- Pieces of a streamed upload whose digest is not known yet. Moved into
-- library_pieces when the stream ends; never read otherwise.
CREATE UNLOGGED TABLE library_staging (
    upload_id text NOT NULL,
    idx       integer NOT NULL,
    size      integer NOT NULL,
    encoding  text NOT NULL,
    hash      bytea NOT NULL,
    data      bytea NOT NULL,
    PRIMARY KEY (upload_id, idx)
);

-- Artifacts: a transcript, a file a session pushed, an upload. produced_*
-- is stamped by the recorder when the producing session ends; it is NULL on
-- uploads, and nothing on the upload path can set it.
CREATE TABLE artifacts (
    id               text PRIMARY KEY,
    kind             text NOT NULL CHECK (kind IN ('transcript', 'pushed', 'upload')),
    name             text NOT NULL,
    digest           text NOT NULL,
    size             bigint NOT NULL,
    content_type     text NOT NULL DEFAULT '',
    content_missing  boolean NOT NULL DEFAULT false,
    content_omitted  boolean NOT NULL DEFAULT false,
    -- by_reference: the session named a digest it pushed elsewhere rather
    -- than sending the bytes; naming a digest never grants reading it.
    by_reference     boolean NOT NULL DEFAULT false,
    org              text NOT NULL,
    member           text NOT NULL,
    session_id       text NOT NULL DEFAULT '',
    step_id          text NOT NULL DEFAULT '',
    produced_by      jsonb,
    created_at       timestamptz NOT NULL
);
CREATE INDEX artifacts_digest ON artifacts (digest);
CREATE INDEX artifacts_session ON artifacts (session_id) WHERE session_id <> '';
CREATE INDEX artifacts_owner ON artifacts (org, member);

CREATE INDEX steps_content ON steps ((detail->>'contentDigest')) WHERE detail ? 'contentDigest';

-- For auditors in psql: every artifact with its producer (or none).
CREATE VIEW library_artifact_producers AS
SELECT a.id AS artifact_id, a.kind, a.name, a.digest, a.size, a.org, a.member,
       a.produced_by->>'app' AS produced_app, a.produced_by->>'model' AS produced_model,
       a.produced_by->>'effort' AS produced_effort, a.produced_by->>'sessionId' AS produced_session,
       a.produced_by IS NULL AS person_uploaded_or_pending, a.created_at
FROM artifacts a;

-- Every file with the producers of the artifacts that reference it.
CREATE VIEW library_file_producers AS
SELECT f.digest, f.size, count(a.id) AS artifacts,
       coalesce(jsonb_agg(DISTINCT a.produced_by) FILTER (WHERE a.produced_by IS NOT NULL), '[]') AS producers,
       bool_or(a.kind = 'upload') AS uploaded_by_a_person
FROM library_files f LEFT JOIN artifacts a ON a.digest = f.digest
GROUP BY f.digest, f.size;
