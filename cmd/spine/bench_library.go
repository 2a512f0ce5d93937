package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"

	"github.com/spinehq/spine/internal/bench"
	"github.com/spinehq/spine/internal/config"
)

const benchLibraryUsage = `usage: spine bench library [flags]

library puts and gets files through the Library's PostgreSQL store: small
files (1 KiB, put in transactions of 100 with PutMany, read with Get) and
large files (8 MiB, streamed in with Put and out with ReadRange), each both
as text (lines of the real transcripts in ../shared/fixtures) and as random
bytes, every file with its own digest. Beside each figure it times BLAKE3 +
zstd (SpeedDefault) on the same bytes in memory, in the same run; "putRatio"
and "getRatio" are the store's MB/s over that raw baseline's. "dedupPut" is
putting every file a second time. "transcripts" is the stored/raw size of
every *.jsonl and *.json under ../shared/fixtures (found beside the
directory holding go.mod, walking up from the working directory), or null
with "transcriptsReason". It prints one JSON object on stdout, uses a
database spine_bench_<random> on the PostgreSQL that spine serve would find
and drops it at the end. It exits 1 if any byte read back differs.

Flags of library:
`

func runBenchLibrary(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("bench library", flag.ContinueOnError)
	small := fs.Int("small-count", bench.DefaultSmallCount, "1 KiB files of each kind (text, random)")
	large := fs.Int("large-count", bench.DefaultLargeCount, "8 MiB files of each kind (text, random)")
	fs.Bool("json", true, "print JSON (always; accepted for scripts)")
	if err := parseNoArgs(fs, benchLibraryUsage, args); err != nil {
		return err
	}
	if *small < 1 || *large < 1 {
		return usageError{fmt.Sprintf("bench library: --small-count %d and --large-count %d must be 1 or more", *small, *large)}
	}
	res, err := bench.RunLibrary(ctx, bench.LibraryConfig{SmallCount: *small, LargeCount: *large,
		DatabaseURL: config.DatabaseURL(), Logger: benchLogger()})
	if res == nil {
		return err
	}
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	perr := enc.Encode(res)
	if perr == nil && !res.Verified {
		perr = bench.ErrLibraryMismatch
	}
	// A result with an error failed only its cleanup: the figures stand.
	return errors.Join(perr, err)
}
