-- A session's holes (the recorder's note observations, step_id '', one per
-- run of seqs that never arrived: body {"note":"hole","from","to",…}) are
-- read by the seq they start at: a transcript page's holes after its
-- cursor (recorder.ReadLines), and whether a late chunk fell in one
-- (recorder's inHole). Without this, each read walked every observation of
-- the session's run, its steps' results included. Partial: a run's results,
-- nearly all its observations, cost the recorder's COPY nothing here.
CREATE INDEX observations_holes ON observations (run_id, ((body->>'from')::bigint))
    WHERE step_id = '' AND kind = 'note';
