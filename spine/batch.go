package spine

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// Batch collects rows for one transaction and writes them in bulk.
type Batch struct {
	runs  []Run
	links []Run // runs whose parent is learnt after they were written
	steps []Step
	obs   []Observation
}

// AddRun queues a run.
func (b *Batch) AddRun(r Run) { b.runs = append(b.runs, r) }

// LinkRun sets the parent run and step of a run queued or written before
// (a session's run made before its start named the step it serves).
func (b *Batch) LinkRun(runID, parentRunID, parentStepID string) {
	b.links = append(b.links, Run{ID: runID, ParentRunID: parentRunID, ParentStepID: parentStepID})
}

// AddStep queues a step.
func (b *Batch) AddStep(s Step) { b.steps = append(b.steps, s) }

// AddObservation queues an observation.
func (b *Batch) AddObservation(o Observation) { b.obs = append(b.obs, o) }

// Len is the number of rows queued.
func (b *Batch) Len() int { return len(b.runs) + len(b.links) + len(b.steps) + len(b.obs) }

// Flush writes every queued row and empties the batch, in one round trip.
func (b *Batch) Flush(ctx context.Context, tx pgx.Tx) error {
	var q pgx.Batch
	b.Queue(&q)
	if q.Len() == 0 {
		return nil
	}
	return tx.SendBatch(ctx, &q).Close()
}

// Queue adds the statements that write every queued row to q, to be sent
// with whatever else the caller's transaction writes in one round trip
// (pgx.Tx.SendBatch), and empties the batch. Each table's rows travel as
// one INSERT of arrays: a statement whose text never changes, so it is
// prepared once a connection, and one that needs no answer before the
// next is sent, which COPY does (two round trips each). A failure names
// the table and its row count.
func (b *Batch) Queue(q *pgx.Batch) {
	if n := len(b.runs); n > 0 {
		var c runColumns
		for _, r := range b.runs {
			c.add(r)
		}
		QueueWrite(q, fmt.Sprintf("insert %d runs", n), `INSERT INTO runs (id, kind, org, member, session_id, parent_run_id, parent_step_id, created_at)
			SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::timestamptz[])`,
			c.id, c.kind, c.org, c.member, c.session, c.parentRun, c.parentStep, c.at)
	}
	if len(b.links) > 0 {
		b.queueLinks(q)
	}
	if n := len(b.steps); n > 0 {
		var c stepColumns
		for _, s := range b.steps {
			c.add(s)
		}
		QueueWrite(q, fmt.Sprintf("insert %d steps", n), `INSERT INTO steps (run_id, idx, id, action, source, session_seq, call_id, detail, at)
			SELECT r, i, id, a, s, q, c, d::jsonb, t
			FROM unnest($1::text[], $2::bigint[], $3::text[], $4::text[], $5::text[], $6::bigint[], $7::text[], $8::text[], $9::timestamptz[])
				AS u(r, i, id, a, s, q, c, d, t)`,
			c.run, c.idx, c.id, c.action, c.source, c.seq, c.call, c.detail, c.at)
	}
	if n := len(b.obs); n > 0 {
		var c observationColumns
		for _, o := range b.obs {
			c.add(o)
		}
		QueueWrite(q, fmt.Sprintf("insert %d observations", n), `INSERT INTO observations (run_id, idx, step_id, kind, body, at)
			SELECT r, i, s, k, b::jsonb, t FROM unnest($1::text[], $2::bigint[], $3::text[], $4::text[], $5::text[], $6::timestamptz[])
				AS u(r, i, s, k, b, t)`,
			c.run, c.idx, c.step, c.kind, c.body, c.at)
	}
	*b = Batch{}
}

// QueueWrite queues on q one statement that needs no answer, whose
// failure says what it wrote.
func QueueWrite(q *pgx.Batch, what, sql string, args ...any) {
	q.Queue(sql, args...).Fn = func(br pgx.BatchResults) error {
		if _, err := br.Exec(); err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		return nil
	}
}

// queueLinks queues the links, the last of a run's winning, as one
// statement.
func (b *Batch) queueLinks(q *pgx.Batch) {
	last := map[string]int{}
	for i, l := range b.links {
		last[l.ID] = i
	}
	var ids, parents, steps []string
	for i, l := range b.links {
		if last[l.ID] == i {
			ids, parents, steps = append(ids, l.ID), append(parents, l.ParentRunID), append(steps, l.ParentStepID)
		}
	}
	QueueWrite(q, fmt.Sprintf("link %d runs", len(ids)), `UPDATE runs r SET parent_run_id = u.parent, parent_step_id = u.step
		FROM unnest($1::text[], $2::text[], $3::text[]) AS u(id, parent, step) WHERE r.id = u.id`, ids, parents, steps)
}

// The rows of each table as columns, one array per column.
type (
	runColumns struct {
		id, kind, org, member, session, parentRun, parentStep []string
		at                                                    []time.Time
	}
	stepColumns struct {
		run, id, action, source, call, detail []string
		idx                                   []int64 // bigint: a value past int4 is refused by the column, as COPY refused it
		seq                                   []*int64
		at                                    []time.Time
	}
	observationColumns struct {
		run, step, kind, body []string
		idx                   []int64
		at                    []time.Time
	}
)

func (c *runColumns) add(r Run) {
	c.id, c.kind, c.org, c.member = append(c.id, r.ID), append(c.kind, r.Kind), append(c.org, r.Org), append(c.member, r.Member)
	c.session, c.parentRun, c.parentStep = append(c.session, r.SessionID), append(c.parentRun, r.ParentRunID), append(c.parentStep, r.ParentStepID)
	c.at = append(c.at, r.CreatedAt)
}

func (c *stepColumns) add(s Step) {
	c.run, c.idx, c.id, c.action, c.source = append(c.run, s.RunID), append(c.idx, int64(s.Idx)), append(c.id, s.ID), append(c.action, s.Action), append(c.source, s.Source)
	c.seq, c.call, c.detail, c.at = append(c.seq, s.SessionSeq), append(c.call, s.CallID), append(c.detail, string(s.Detail)), append(c.at, s.At)
}

func (c *observationColumns) add(o Observation) {
	c.run, c.idx, c.step, c.kind = append(c.run, o.RunID), append(c.idx, int64(o.Idx)), append(c.step, o.StepID), append(c.kind, o.Kind)
	c.body, c.at = append(c.body, string(o.Body)), append(c.at, o.At)
}
