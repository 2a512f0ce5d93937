package main

import (
	"context"
	"flag"
	"fmt"
	"time"

	"github.com/spinehq/spine/internal/bench"
	"github.com/spinehq/spine/internal/config"
)

const benchFloodUsage = `usage: spine bench flood [flags]

flood posts --requests ingest requests to a running spine, --concurrency
at a time, each a whole session with one chunk of --chunk-kib (429s are
retried after their Retry-After, as spine import does). With --pid (the
spine serve process, on this machine) it samples the server's resident
memory throughout and for --settle after the last answer, and reports the
peak. It prints one JSON object. scripts/bench-limits.sh runs it against a
fresh spine serve, with the limits off and on.

Flags of flood:
`

func runBenchFlood(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("bench flood", flag.ContinueOnError)
	url := fs.String("url", "", "spine HTTP API (default $SPINE_URL or "+config.DefaultURL+")")
	token := fs.String("token", "", "bearer token (default $SPINE_TOKEN)")
	requests := fs.Int("requests", bench.DefaultFloodRequests, "requests to post")
	conc := fs.Int("concurrency", 0, "requests in flight at once (default all of them)")
	chunk := fs.Int("chunk-kib", bench.DefaultFloodChunk>>10, "KiB of text in each request's chunk")
	pid := fs.Int("pid", 0, "the spine serve process whose memory to sample (0: none)")
	settle := fs.Duration("settle", bench.DefaultFloodSettle, "how long to keep sampling after the last answer")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), benchFloodUsage)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 || *requests < 1 || *chunk < 1 || *conc < 0 || *settle < time.Duration(0) {
		fs.Usage()
		return usageError{"bench flood takes no arguments, and every count and size is 1 or more"}
	}
	remote := config.RemoteFromEnv(*url, *token)
	res, err := bench.Flood(ctx, bench.FloodConfig{URL: remote.URL,
		Token: remote.Token, Requests: *requests, Concurrency: *conc,
		ChunkBytes: *chunk << 10, PID: *pid, Settle: *settle})
	return printBenchResult(res, err)
}
