// Package bench measures spine against a raw baseline in the same run, so
// the figure that matters is a ratio rather than a number that depends on
// the machine (docs/performance.md).
//
// Ingest sends the same workload twice through one embedded nats-server and
// one fresh PostgreSQL database:
//
//   - spine: envelopes published with streams.Publisher to SPINE_SESSIONS
//     and projected by the recorder (validation, sessions, steps,
//     observations, transcripts, checkpoint), timed from the first publish
//     until the recorder's checkpoint reaches the last message published;
//   - raw: the same bytes published to a plain stream, fetched by a plain
//     pull consumer in batches of the same size, decoded into the chunk
//     columns and written with one COPY per batch, timed from the first
//     publish until the last COPY committed.
//
// A third phase offers chunks at a fixed rate, paced by a ticker, and
// measures each chunk's latency from publish to commit through the
// projector's OnCommit hook. At the end the projections are counted against
// what was sent, and a mismatch makes the result unverified.
//
// Config.Instances starts several nodes on the same database and log and
// deals sessions to them in turn; Config.Cluster puts the log on three
// in-process nats-servers with every stream at replicas 3 (the raw
// baseline's too). Result.Scale says what each instance did: without
// Config.Partitions a projector has one leader, so extra instances add
// publishing connections, not projection throughput (ScaleNote); with it
// the recorder's partitions are spread over them, and Scale.Burst gives each
// instance's part in spine's first burst, its busy time and the CPU the
// burst used, for a machine with cores enough to show a gain
// (PartitionedNote). Config.Duration turns the run into
// a soak: a sustained offered rate with resident memory sampled over time
// (Result.Soak).
//
// RunLag measures live capture end to end: the real `spine collect` and
// `spine run` (the spine binary, as a person runs them) read lines the
// benchmark writes, copies of the real apps' output in the fixtures, at a
// fixed rate; each line is timed from its write to the recorder's commit
// of every envelope its translation makes (predicted by translating the
// same lines with the same apps.Translator, so the ids match) and to its
// text read back through the HTTP transcript read. The raw baseline in
// the same run is the ingest latency phase at the same rate.
//
// RunOTLP measures the apps' telemetry door: Claude Code api_request and
// tool_result records copied from the real captures (testdata/otlp),
// posted to POST /otlp/v1/logs as protobuf and as JSON until the recorder
// committed the last envelope, beside the raw path (the same records'
// envelopes through a plain stream and COPY) of the same run.
//
//	res, err := bench.Run(ctx, bench.Config{Sessions: 20, Chunks: 500})
//	if err != nil { ... }
//	fmt.Println(res.Spine.ChunksPerSecond, res.Raw.ChunksPerSecond, res.Ratio)
//
// Each run uses a fresh data directory and a database named
// spine_bench_<random> on the PostgreSQL that `spine serve` would find
// (SPINE_DATABASE_URL, a server on 127.0.0.1:5432, or a private cluster);
// both are removed when it ends.
package bench
