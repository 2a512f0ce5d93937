package main

import (
	"context"
	"flag"

	"github.com/spinehq/spine/internal/bench"
	"github.com/spinehq/spine/internal/config"
)

const benchOTLPUsage = `usage: spine bench otlp [flags]

otlp measures OTLP log events/s through spine's telemetry door, on a fresh
node (temporary data directory, database spine_bench_<random>, removed at
the end). The workload is Claude Code sessions of api_request and
tool_result records copied from the real captures (testdata/otlp), each
session with ids of its own, cut into export requests. It posts them to
POST /otlp/v1/logs as application/x-protobuf, then as application/json
(fresh sessions each), timed from the first POST until the recorder has
committed the last envelope they made. Beside them, "raw" is the baseline
of the same run: as many records, translated as the door does, published
as envelopes to a plain stream and written with one COPY a batch ("baseline"
in the JSON says why not POST /v1/ingest). Each phase's sessions, steps and
ledgered requests are then counted against what was sent. It prints one
JSON object and exits 1 if they do not match.

Flags of otlp:
`

func runBenchOTLP(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("bench otlp", flag.ContinueOnError)
	sessions := fs.Int("sessions", bench.DefaultOTLPSessions, "Claude Code sessions each phase sends")
	events := fs.Int("events", bench.DefaultOTLPEvents, "log records a session, api_request and tool_result in turn")
	per := fs.Int("per-request", bench.DefaultOTLPPerRequest, "records in one export request")
	conc := fs.Int("concurrency", bench.DefaultOTLPConcurrency, "export requests in flight at once")
	captures := fs.String("captures", "", "the folder of the apps' OTLP captures (default testdata/otlp of the repository above the working directory)")
	fs.Bool("json", true, "print JSON (always; accepted for scripts)")
	if err := parseNoArgs(fs, benchOTLPUsage, args); err != nil {
		return err
	}
	res, err := bench.RunOTLP(ctx, bench.OTLPConfig{Sessions: *sessions, Events: *events, PerRequest: *per,
		Concurrency: *conc, Captures: *captures, DatabaseURL: config.DatabaseURL(), Logger: benchLogger()})
	return printBenchResult(res, err)
}
