package main

import (
	"context"
	"flag"
	"fmt"

	"github.com/spinehq/spine/internal/bench"
	"github.com/spinehq/spine/internal/config"
)

const benchLagUsage = `usage: spine bench lag [flags]

lag measures how long a line an app writes takes to be readable through
spine, for spine collect and for spine run, on a fresh node (temporary
data directory, database spine_bench_<random>, removed at the end).

collect: this binary's spine collect tails a Claude Code and a Codex
directory while the benchmark appends real transcript and rollout lines
(copies of the fixtures with fresh ids) to --sessions files at --rate
lines/s. run: this binary's spine run runs an app that is cat, and the
benchmark writes real stream-json lines ("run"), then exec --json lines
("runCodex", spine run --app codex), to its input at --rate lines/s.
Each line is timed from its write to every envelope its translation makes
committed by the recorder, and to its text read back through GET
/v1/sessions/{id}/transcript (p50/p90/p99/max). Beside them, "raw" is the
ingest benchmark's latency phase in the same run: chunks published
straight to JetStream at --rate, timed to the recorder's commit. It
prints one JSON object.

Flags of lag:
`

func runBenchLag(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("bench lag", flag.ContinueOnError)
	mode := fs.String("mode", "both", "what to measure: collect, run or both")
	rate := fs.Int("rate", bench.DefaultLagRate, "lines/s written in each phase (and chunks/s of the raw baseline)")
	lines := fs.Int("lines", bench.DefaultLagLines, "lines written in each phase, after a warm-up session")
	sessions := fs.Int("sessions", bench.DefaultLagSessions, "files the collect phase appends to at once")
	poll := fs.Duration("poll", bench.DefaultLagPoll, "the transcript reader's interval while a chunk is awaited (it also reads on each commit)")
	raw := fs.Duration("raw", bench.DefaultLagRawSeconds, "how long the raw baseline offers chunks (0s skips it)")
	fixtures := fs.String("fixtures", "", "the folder of real app output: claude-transcripts/, codex-rollout/, claude-stream-json/ (default ../shared/fixtures beside the repository)")
	spine := fs.String("spine", "", "the spine binary whose collect and run are measured, to compare builds (default this one)")
	fs.Bool("json", true, "print JSON (always; accepted for scripts)")
	if err := parseNoArgs(fs, benchLagUsage, args); err != nil {
		return err
	}
	cfg := bench.LagConfig{Rate: *rate, Lines: *lines, Sessions: *sessions, Poll: *poll, RawSeconds: *raw,
		Fixtures: *fixtures, Spine: *spine, DatabaseURL: config.DatabaseURL(), Logger: benchLogger()}
	switch *mode {
	case "collect":
		cfg.Collect = true
	case "run":
		cfg.Run = true
	case "both":
	default:
		return usageError{fmt.Sprintf("bench lag --mode %q: want collect, run or both", *mode)}
	}
	if *raw == 0 {
		cfg.RawSeconds = bench.NoLatency
	}
	res, err := bench.RunLag(ctx, cfg)
	return printBenchResult(res, err)
}
