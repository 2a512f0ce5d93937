package bench

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5/pgxpool"
)

// verifySQL counts what the run left in PostgreSQL. A session counts as
// ended when it is done, has no holes and has its transcript file.
const verifySQL = `SELECT
	(SELECT count(*) FROM sessions WHERE status = 'done' AND ended_at IS NOT NULL
		AND dropped_actions = 0 AND transcript_file_id <> ''),
	(SELECT count(*) FROM session_chunks),
	(SELECT count(*) FROM steps),
	(SELECT count(*) FROM dead_letters),
	(SELECT count(*) FROM ` + rawTable + `)`

// verify counts the projections against what spine was sent (sent) and
// the raw table against the chunks the raw path was sent (rawSent).
func verify(ctx context.Context, pool *pgxpool.Pool, sent counts, rawSent int) (Verification, error) {
	v := Verification{SessionsSent: sent.sessions, TextChunksSent: sent.chunks - sent.events,
		EventChunksSent: sent.events, RawRowsSent: rawSent}
	err := pool.QueryRow(ctx, verifySQL).Scan(&v.SessionsEnded, &v.ChunkRows, &v.StepRows, &v.DeadLetters, &v.RawRows)
	if err != nil {
		return v, fmt.Errorf("verify: %w", err)
	}
	return v, nil
}
