package bench

import (
	"context"
	"fmt"
	"time"

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
// Nats-Msg-Id through a window of outstanding acks, fetched in batches by a
// plain pull consumer, each batch's chunks written with one COPY, then acked,
// the next fetch overlapping the COPY. It is timed from the first publish
// until the last COPY committed.
func runRaw(ctx context.Context, tb *testbed, b *burst) (Throughput, RawTuning, error) {
	t, err := runRawShaped(ctx, tb, b, rawTuned, rawChunks)
	return t, rawTuned, err
}

// runRawShaped is runRaw writing shape's rows, tuned as tuning says.
func runRawShaped(ctx context.Context, tb *testbed, b *burst, tuning RawTuning, shape rawShape) (Throughput, error) {
	cons, err := setupRaw(ctx, tb, tuning, shape)
	if err != nil {
		return Throughput{}, err
	}
	js, err := jetstream.New(tb.node.NC, jetstream.WithPublishAsyncMaxPending(tuning.PublishWindow))
	if err != nil {
		return Throughput{}, fmt.Errorf("raw jetstream: %w", err)
	}
	sink := &rawSink{pool: tb.node.Pool, cons: cons, tuning: tuning, shape: shape, commits: newCommits()}
	runCtx, cancel := context.WithCancelCause(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		cancel(sink.run(runCtx))
	}()
	defer func() { cancel(nil); <-done }()
	return timeRaw(runCtx, js, sink, b)
}

func timeRaw(ctx context.Context, js jetstream.JetStream, sink *rawSink, b *burst) (Throughput, error) {
	mark := readCPU()
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
	return newThroughput(b.counts, published, done.Sub(start), sink.commits.batchCount()).withCPU(cpuSince(mark)), nil
}

// setupRaw creates the stream, the table and a consumer configured as the
// projector configures its own, but for its fetch size and ack window.
func setupRaw(ctx context.Context, tb *testbed, tuning RawTuning, shape rawShape) (jetstream.Consumer, error) {
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
		AckPolicy: jetstream.AckAllPolicy, AckWait: 2 * time.Minute, MaxAckPending: tuning.MaxAckPending,
		DeliverPolicy: jetstream.DeliverAllPolicy})
	if err != nil {
		return nil, fmt.Errorf("create consumer %s: %w", rawConsumer, err)
	}
	return cons, nil
}
