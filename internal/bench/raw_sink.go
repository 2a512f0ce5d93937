package bench

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/spinehq/spine/internal/fastjson"
	"github.com/spinehq/spine/streams"
)

// rawSink is the baseline's consumer: fetch and decode the shape's columns
// in one goroutine, COPY and ack in another, so the next batch is fetched
// and decoded while this one is written. Nothing else.
type rawSink struct {
	pool    *pgxpool.Pool
	cons    jetstream.Consumer
	tuning  RawTuning
	shape   rawShape
	commits *commits
}

// rawBatch is one fetched batch, decoded: its rows and the message whose
// ack (AckAll) acks the batch.
type rawBatch struct {
	rows [][]any
	last jetstream.Msg
	seq  uint64
}

func (s *rawSink) run(ctx context.Context) error {
	batches := make(chan rawBatch, s.tuning.Pipeline)
	fetchErr := make(chan error, 1)
	go func() {
		defer close(batches)
		fetchErr <- s.fetch(ctx, batches)
	}()
	for b := range batches {
		if err := s.write(ctx, b); err != nil {
			return err
		}
	}
	return <-fetchErr
}

// fetch fetches and decodes batches until ctx ends.
func (s *rawSink) fetch(ctx context.Context, out chan<- rawBatch) error {
	for ctx.Err() == nil {
		fetched, err := s.cons.Fetch(s.tuning.FetchBatch, jetstream.FetchMaxWait(rawFetchWait))
		if err != nil {
			return fmt.Errorf("raw fetch: %w", err)
		}
		b, err := s.decode(fetched)
		if err != nil || b.last == nil {
			if err != nil {
				return err
			}
			continue
		}
		select {
		case out <- b:
		case <-ctx.Done():
		}
	}
	return nil
}

func (s *rawSink) decode(fetched jetstream.MessageBatch) (rawBatch, error) {
	b := rawBatch{rows: make([][]any, 0, s.tuning.FetchBatch)}
	for m := range fetched.Messages() {
		row, ok, err := s.shape.row(m.Data())
		if err != nil {
			return rawBatch{}, fmt.Errorf("raw decode: %w", err)
		}
		if ok {
			b.rows = append(b.rows, row)
		}
		b.last = m
	}
	if b.last == nil {
		return b, nil
	}
	md, err := b.last.Metadata()
	if err != nil {
		return rawBatch{}, fmt.Errorf("raw metadata: %w", err)
	}
	b.seq = md.Sequence.Stream
	return b, nil
}

// rawChunk is the part of an envelope the baseline reads.
type rawChunk struct {
	Type      string    `json:"type"`
	SessionID string    `json:"sessionId"`
	Seq       int64     `json:"seq"`
	Stream    string    `json:"stream"`
	Text      string    `json:"text"`
	At        time.Time `json:"at"`
}

// chunkRow is a chunk's columns, decoded by the decoder spine's own
// streams.Decode uses (without its validation, which is spine's logic).
func chunkRow(data []byte) ([]any, bool, error) {
	var c rawChunk
	if err := fastjson.Unmarshal(data, &c); err != nil {
		return nil, false, err
	}
	return []any{c.SessionID, c.Seq, c.Stream, c.Text, c.At}, c.Type == streams.TypeSessionChunk, nil
}

func (s *rawSink) write(ctx context.Context, b rawBatch) error {
	if _, err := s.pool.CopyFrom(ctx, pgx.Identifier{s.shape.table}, s.shape.columns, pgx.CopyFromRows(b.rows)); err != nil {
		return fmt.Errorf("raw copy %d rows: %w", len(b.rows), err)
	}
	s.commits.onCommit(b.seq, nil) // committed: COPY outside a transaction commits itself
	// AckAll: acking the last message acks the batch.
	if err := b.last.Ack(); err != nil && !errors.Is(err, nats.ErrConnectionClosed) {
		return fmt.Errorf("raw ack: %w", err)
	}
	return nil
}
