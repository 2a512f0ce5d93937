package main

import (
	"context"
	"flag"

	"github.com/spinehq/spine/internal/bench"
	"github.com/spinehq/spine/internal/config"
)

const benchDispatchUsage = `usage: spine bench dispatch [flags]

dispatch starts a fresh node (temporary data directory, database
spine_bench_<random>, removed at the end) and drives desktop tasks over
real HTTP: create → runner notified over the SSE event stream (p50/p99,
one create at a time), then claim → heartbeat → events → complete cycles
per second with N runners each cycling its own tasks, beside a raw
baseline of the same four writes published straight to JetStream with the
per-task expected sequence. It prints one JSON object; "ratio" is spine's
cycles/s over raw's.

Flags of dispatch:
`

func runBenchDispatch(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("bench dispatch", flag.ContinueOnError)
	runners := fs.Int("runners", bench.DefaultDispatchRunners, "fake runners cycling tasks at once")
	tasks := fs.Int("tasks", bench.DefaultDispatchTasks, "tasks cycled claim → complete")
	samples := fs.Int("samples", bench.DefaultDispatchSamples, "creates timed until the runner is notified")
	fs.Bool("json", true, "print JSON (always; accepted for scripts)")
	if err := parseNoArgs(fs, benchDispatchUsage, args); err != nil {
		return err
	}
	res, err := bench.RunDispatch(ctx, bench.DispatchConfig{Runners: *runners, Tasks: *tasks, Samples: *samples,
		DatabaseURL: config.DatabaseURL(), Logger: benchLogger()})
	return printBenchResult(res, err)
}
