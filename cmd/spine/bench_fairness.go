package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"

	"github.com/spinehq/spine/internal/bench"
	"github.com/spinehq/spine/internal/config"
)

const benchFairnessUsage = `usage: spine bench fairness [flags]

fairness measures how long a small session of one org waits behind
another org's burst. Org A posts --burst-mib of sessions through HTTP
ingest (--senders clients, each session one request, 429s retried after
their Retry-After); once half of it is accepted, org B posts one small
session, and the run times B's session from accepted to readable (GET
/v1/sessions/{id} shows it ended). It runs twice, each on a fresh node
(temporary data directory, database spine_bench_<random>, removed at the
end): with per-org quotas off, then on (spine's defaults, or the flags).
It prints one JSON object; "ratio" is B's wait with quotas off over its
wait with them on.

Flags of fairness:
`

func runBenchFairness(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("bench fairness", flag.ContinueOnError)
	burst := fs.Int64("burst-mib", bench.DefaultFairnessBurst>>20, "MiB org A sends")
	chunk := fs.Int("chunk-kib", bench.DefaultFairnessChunk>>10, "KiB of text per chunk of org A")
	chunks := fs.Int("chunks", bench.DefaultFairnessChunks, "chunks per session of org A (one request each)")
	senders := fs.Int("senders", bench.DefaultFairnessSend, "clients posting org A's sessions at once")
	bytesPS := fs.Float64("org-bytes-per-sec", 0, "the quota run's bytes/s per org (default spine's, "+config.EnvOrgBytesPerSec+")")
	envsPS := fs.Float64("org-envelopes-per-sec", 0, "the quota run's envelopes/s per org (default spine's)")
	fs.Bool("json", true, "print JSON (always; accepted for scripts)")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), benchFairnessUsage)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 || *burst < 1 || *chunk < 1 || *chunks < 1 || *senders < 1 {
		fs.Usage()
		return usageError{"bench fairness takes no arguments, and every size and count is 1 or more"}
	}
	res, err := bench.Fairness(ctx, bench.FairnessConfig{BurstBytes: *burst << 20, ChunkBytes: *chunk << 10,
		SessionChunks: *chunks, Senders: *senders, OrgBytesPerSec: *bytesPS, OrgEnvelopesPerSec: *envsPS,
		DatabaseURL: config.DatabaseURL(), Logger: benchLogger()})
	if err != nil {
		return err
	}
	enc := json.NewEncoder(stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(res)
}
