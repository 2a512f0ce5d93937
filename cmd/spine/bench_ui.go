package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"

	"github.com/spinehq/spine/internal/bench"
	"github.com/spinehq/spine/internal/config"
)

const benchUIUsage = `usage: spine bench ui [flags]

ui records one long session on a fresh node (temporary data directory,
database spine_bench_<random>, removed at the end): --chunks stdout chunks
and --steps command events interleaved, one seq in 1,000 never sent (a
hole), then its end. It times the first render of its page, GET
/ui/sessions/{id} over HTTP as its owner (auth, the reads, the template),
--samples times, beside a raw baseline in the same run: the rows that
render shows (the session, its router call, 500 chunks, the hole notes,
100 steps and their observations, 100 artifacts) read with plain SQL on the
same pool, nothing rendered. It prints one JSON object; "ratio" is the
page's p50 over the raw reads'. It exits 1 if the page did not hold exactly
one page of each list (500 lines, 100 steps).

Flags of ui:
`

func runBenchUI(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("bench ui", flag.ContinueOnError)
	chunks := fs.Int("chunks", bench.DefaultUIChunks, "stdout chunks of the session")
	steps := fs.Int("steps", bench.DefaultUISteps, "command events (steps) of the session")
	samples := fs.Int("samples", bench.DefaultUISamples, "first renders timed (and raw reads)")
	fs.Bool("json", true, "print JSON (always; accepted for scripts)")
	if err := parseNoArgs(fs, benchUIUsage, args); err != nil {
		return err
	}
	res, err := bench.RunUI(ctx, bench.UIConfig{Chunks: *chunks, Steps: *steps, Samples: *samples,
		DatabaseURL: config.DatabaseURL(), Logger: benchLogger()})
	if res == nil {
		return err
	}
	enc := json.NewEncoder(stdout)
	enc.SetIndent("", "  ")
	perr := enc.Encode(res)
	if perr == nil && !res.Verified {
		perr = bench.ErrPageUnbounded
	}
	// A result with an error failed only its cleanup: the figures stand.
	return errors.Join(perr, err)
}
