package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/spinehq/spine/streams"
)

// The raw path's stream, consumer and table.
const (
	rawStream   = "BENCH_RAW"
	rawSubjects = "bench.raw."
	rawConsumer = "bench_raw"
	rawTable    = "bench_raw_chunks"
)

// rawFetchWait is how long a fetch waits to fill a batch: the projector's
// default MaxWait, so both paths batch alike.
const rawFetchWait = streams.DefaultMaxWait

// rawTableDDL has session_chunks' columns and primary key and nothing else.
const rawTableDDL = `CREATE TABLE ` + rawTable + ` (
	session_id text NOT NULL,
	seq        bigint NOT NULL,
	stream     text NOT NULL,
	text       text NOT NULL,
	at         timestamptz NOT NULL,
	PRIMARY KEY (session_id, seq))`

var rawColumns = []string{"session_id", "seq", "stream", "text", "at"}

// rawShape is what the raw path writes: its table, made by ddl, and the
// row of an envelope's bytes (ok false for an envelope it keeps none of).
type rawShape struct {
	table   string
	ddl     string
	columns []string
	row     func(data []byte) (row []any, ok bool, err error)
}

// rawChunks is the ingest baseline's shape: the chunk columns.
var rawChunks = rawShape{table: rawTable, ddl: rawTableDDL, columns: rawColumns, row: chunkRow}

// runRaw is the baseline: the burst's bytes published to a plain stream with
// Nats-Msg-Id, fetched in batches by a plain pull consumer, and each
// batch's chunks written with one COPY, then acked. It is timed from the
// first publish until the last COPY committed.
func runRaw(ctx context.Context, tb *testbed, b *burst, batch int) (Throughput, error) {
	return runRawShaped(ctx, tb, b, batch, rawChunks)
}

// runRawShaped is runRaw writing shape's rows.
func runRawShaped(ctx context.Context, tb *testbed, b *burst, batch int, shape rawShape) (Throughput, error) {
	cons, err := setupRaw(ctx, tb, batch, shape)
	if err != nil {
		return Throughput{}, err
	}
	sink := &rawSink{pool: tb.node.Pool, cons: cons, batch: batch, shape: shape, commits: newCommits()}
	runCtx, cancel := context.WithCancelCause(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		cancel(sink.run(runCtx))
	}()
	defer func() { cancel(nil); <-done }()
	return timeRaw(runCtx, tb.node.JS, sink, b)
}

func timeRaw(ctx context.Context, js jetstream.JetStream, sink *rawSink, b *burst) (Throughput, error) {
	start := time.Now()
	seqs, err := publishAll(ctx, len(b.envs), func(i int) (jetstream.PubAckFuture, error) {
		msg := nats.NewMsg(rawSubjects + b.envs[i].SessionID)
		msg.Data = b.data[i]
		msg.Header.Set(jetstream.MsgIDHeader, b.envs[i].ID)
		return js.PublishMsgAsync(msg)
	})
	if err != nil {
		return Throughput{}, fmt.Errorf("raw publish: %w", err)
	}
	published := time.Since(start)
	done, err := sink.commits.waitFor(ctx, lastSeq(seqs))
	if err != nil {
		return Throughput{}, fmt.Errorf("raw commit: %w", err)
	}
	return newThroughput(b.counts, published, done.Sub(start), sink.commits.batchCount()), nil
}

// setupRaw creates the stream, the table and a consumer configured as the
// projector configures its own.
func setupRaw(ctx context.Context, tb *testbed, batch int, shape rawShape) (jetstream.Consumer, error) {
	_, err := tb.node.JS.CreateStream(ctx, jetstream.StreamConfig{Name: rawStream,
		Subjects: []string{rawSubjects + ">"}, Storage: jetstream.FileStorage, Replicas: tb.replicas,
		Duplicates: streams.DuplicateWindow, MaxMsgSize: streams.MaxEnvelopeBytes})
	if err != nil {
		return nil, fmt.Errorf("create stream %s: %w", rawStream, err)
	}
	if _, err := tb.node.Pool.Exec(ctx, shape.ddl); err != nil {
		return nil, fmt.Errorf("create table %s: %w", shape.table, err)
	}
	cons, err := tb.node.JS.CreateOrUpdateConsumer(ctx, rawStream, jetstream.ConsumerConfig{Durable: rawConsumer,
		AckPolicy: jetstream.AckAllPolicy, AckWait: 2 * time.Minute, MaxAckPending: batch * 4,
		DeliverPolicy: jetstream.DeliverAllPolicy})
	if err != nil {
		return nil, fmt.Errorf("create consumer %s: %w", rawConsumer, err)
	}
	return cons, nil
}

// rawSink is the baseline's consumer: fetch, decode the shape's columns,
// COPY, ack. Nothing else.
type rawSink struct {
	pool    *pgxpool.Pool
	cons    jetstream.Consumer
	batch   int
	shape   rawShape
	commits *commits
}

func (s *rawSink) run(ctx context.Context) error {
	for ctx.Err() == nil {
		fetched, err := s.cons.Fetch(s.batch, jetstream.FetchMaxWait(rawFetchWait))
		if err != nil {
			return fmt.Errorf("raw fetch: %w", err)
		}
		var msgs []jetstream.Msg
		for m := range fetched.Messages() {
			msgs = append(msgs, m)
		}
		if len(msgs) == 0 {
			continue
		}
		if err := s.write(ctx, msgs); err != nil {
			return err
		}
	}
	return nil
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

// chunkRow is a chunk's columns.
func chunkRow(data []byte) ([]any, bool, error) {
	var c rawChunk
	if err := json.Unmarshal(data, &c); err != nil {
		return nil, false, err
	}
	return []any{c.SessionID, c.Seq, c.Stream, c.Text, c.At}, c.Type == streams.TypeSessionChunk, nil
}

func (s *rawSink) write(ctx context.Context, msgs []jetstream.Msg) error {
	last := msgs[len(msgs)-1]
	md, err := last.Metadata()
	if err != nil {
		return fmt.Errorf("raw metadata: %w", err)
	}
	rows := make([][]any, 0, len(msgs))
	for _, m := range msgs {
		row, ok, err := s.shape.row(m.Data())
		if err != nil {
			return fmt.Errorf("raw decode: %w", err)
		}
		if ok {
			rows = append(rows, row)
		}
	}
	if _, err := s.pool.CopyFrom(ctx, pgx.Identifier{s.shape.table}, s.shape.columns, pgx.CopyFromRows(rows)); err != nil {
		return fmt.Errorf("raw copy %d rows: %w", len(rows), err)
	}
	s.commits.onCommit(md.Sequence.Stream, nil) // committed: COPY outside a transaction commits itself
	// AckAll: acking the last message acks the batch.
	if err := last.Ack(); err != nil && !errors.Is(err, nats.ErrConnectionClosed) {
		return fmt.Errorf("raw ack: %w", err)
	}
	return nil
}
