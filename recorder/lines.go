package recorder

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/spinehq/spine/spine"
	"github.com/spinehq/spine/streams"
)

// Hole is a run of seqs that never arrived, From to To: the note the
// recorder wrote on the session's run when a chunk jumped past them.
type Hole struct {
	From int64 `json:"from"`
	To   int64 `json:"to"`
}

// Missing is how many seqs the hole lacks.
func (h Hole) Missing() int64 { return h.To - h.From + 1 }

// Line is one place in a transcript as a page shows it: a chunk, or
// (Chunk nil) a hole where chunks never arrived.
type Line struct {
	Chunk *Chunk
	Hole  Hole
}

// Lines is a page of a transcript with its holes in place, in seq order.
type Lines struct {
	Lines []Line
	// Next is the last seq the page covers (a chunk's, or a hole's To):
	// the after of the page that follows. More says whether one does.
	Next int64
	More bool
}

// ReadLines reads the transcript past after, with its holes where they
// are: at most limit lines, and the chunks within MaxPageBytes, as
// ReadChunks reads them. It reads no owner: the caller has read the
// session's row (runID is its SessionRunID) and checked it may show it.
func ReadLines(ctx context.Context, q streams.Querier, sessionID, runID string, after int64, limit int) (*Lines, error) {
	chunks, err := ReadChunks(ctx, q, sessionID, after, limit)
	if err != nil {
		return nil, err
	}
	holes, err := holesAfter(ctx, q, runID, after, limit+1)
	if err != nil {
		return nil, err
	}
	return mergeLines(chunks, holes, after, limit), nil
}

// mergeLines interleaves a page of chunks and the holes after the same
// seq. A hole past the chunks' page waits for the next page when chunks
// remain unread before it; lines past limit wait too.
func mergeLines(chunks *TranscriptPage, holes []Hole, after int64, limit int) *Lines {
	out := &Lines{Next: after, Lines: make([]Line, 0, min(limit, len(chunks.Chunks)+len(holes)))}
	c, h := 0, 0
	for len(out.Lines) < limit {
		chunkNext := c < len(chunks.Chunks)
		holeNext := h < len(holes) && (!chunkNext || holes[h].From < chunks.Chunks[c].Seq)
		switch {
		case holeNext && (chunkNext || !chunks.More):
			out.Lines, out.Next = append(out.Lines, Line{Hole: holes[h]}), holes[h].To
			h++
		case chunkNext:
			out.Lines, out.Next = append(out.Lines, Line{Chunk: &chunks.Chunks[c]}), chunks.Chunks[c].Seq
			c++
		default:
			out.More = chunks.More || h < len(holes)
			return out
		}
	}
	out.More = c < len(chunks.Chunks) || chunks.More || h < len(holes)
	return out
}

// holesAfter reads the run's holes that start after seq, in seq order, at
// most limit: a range of the partial index observations_holes (migration
// 017), never a walk of the run's observations.
func holesAfter(ctx context.Context, q streams.Querier, runID string, after int64, limit int) ([]Hole, error) {
	rows, err := q.Query(ctx, holesAfterSQL, runID, after, limit)
	if err != nil {
		return nil, fmt.Errorf("read holes of %s: %w", runID, err)
	}
	holes, err := pgx.CollectRows(rows, pgx.RowToStructByPos[Hole])
	if err != nil {
		return nil, fmt.Errorf("read holes of %s: %w", runID, err)
	}
	return holes, nil
}

// holeNote is observations_holes' predicate, written out in each query that
// reads the index: a bound parameter in its place would not prove it to a
// generic plan, which would walk the run's observations instead.
const holeNote = `step_id = '' AND kind = '` + spine.ObsNote + `' AND body->>'note' = 'hole'`

// holeFrom is the index's key: where a hole starts.
const holeFrom = `(body->>'from')::bigint`

// holesAfterSQL: the holes of run $1 starting after seq $2, at most $3.
// Holes never overlap and are noted in the order chunks came, so their
// starts order them as their idx does.
const holesAfterSQL = `SELECT ` + holeFrom + `, (body->>'to')::bigint FROM observations
	WHERE run_id = $1 AND ` + holeNote + ` AND ` + holeFrom + ` > $2
	ORDER BY ` + holeFrom + ` LIMIT $3`

// inHoleSQL: whether seq $2 is in a hole of run $1, the one starting
// nearest before it (holes never overlap).
const inHoleSQL = `SELECT coalesce((SELECT (body->>'to')::bigint >= $2 FROM observations
	WHERE run_id = $1 AND ` + holeNote + ` AND ` + holeFrom + ` <= $2
	ORDER BY ` + holeFrom + ` DESC LIMIT 1), false)`
