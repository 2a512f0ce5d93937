package main

import (
	"context"
	"flag"
	"fmt"
	"slices"
	"strings"

	"github.com/spinehq/spine/apps"
	"github.com/spinehq/spine/internal/bench"
	"github.com/spinehq/spine/internal/config"
)

const benchImportUsage = `usage: spine bench import [flags]

import measures two corpus shapes (--shape; default both). The tiny shape
writes, for each format, a large file of copies of the fixtures'
lines (../shared/fixtures; fresh ids in every copy, so every copy is its
own session and responses), then times on it the dry run of spine import
(read, parse, build and validate every envelope) beside a raw baseline of
the same file (bufio.Scanner + json.Unmarshal into map[string]any per
line), and finally imports a smaller file of each format through a fresh
node (JetStream, recorder, PostgreSQL; temporary data directory and
database spine_bench_<random>, removed at the end), timed until the
recorder has committed everything. Each phase reports its peak resident
memory (VmHWM, reset before each phase where Linux allows). After the
node phase it times cost reports from spine's projections over HTTP
(GET /v1/cost/summary: groupBy=session, every session and a first page of
100; groupBy=day from the calls' first to last second and over whole days)
beside the wall time of "ccusage session --json --offline" and "ccusage
daily --json --offline" on the same Claude transcript and Codex rollout files,
laid out as Claude Code and Codex keep them; without ccusage its figures
are null and ccusageReason says why. The realistic shape ("realistic" in
the JSON) writes --realistic-size MB of Claude Code and Codex history built
from the transcript and rollout fixtures: sessions of about 1 MB whose
bytes are mostly long tool outputs, --realistic-codex percent of them
(default 25) Codex rollouts under codex/sessions/YYYY/MM/DD, the others
Claude Code's, with a subagent's transcript beside every second one
(<session>/subagents/agent-*.jsonl) and every third saved again as two
prefix copies, which the import counts once; it times the dry run (of all,
and of each format's files) and the raw baseline on it, then imports it
through a fresh node, Claude Code's files and then Codex's, each until
every session has ended and its router call is written. It prints one JSON
object; "ratio" is the dry run's MB/s over raw's, and in reports
ccusage's wall time over spine's latency.

Flags of import:
`

func runBenchImport(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("bench import", flag.ContinueOnError)
	size := fs.Int64("size", bench.DefaultImportSize>>20, "MB per format for the dry run and the raw baseline")
	nodeSize := fs.Int64("node-size", bench.DefaultImportNodeSize>>20, "MB per format imported through a node (0 skips the node)")
	shape := fs.String("shape", "", "corpus shapes, comma-separated: tiny, realistic (default both)")
	realistic := fs.Int64("realistic-size", bench.DefaultRealisticSize>>20, "MB of the realistic corpus (dry run, raw baseline and node)")
	codex := fs.Int("realistic-codex", bench.DefaultRealisticCodex, "percent of the realistic corpus's sessions that are Codex rollouts (0: Claude Code only)")
	formats := fs.String("formats", "", fmt.Sprintf("comma-separated formats (default all: %v)", apps.Formats))
	fixtures := fs.String("fixtures", "", "fixtures directory (default ../shared/fixtures beside the module root)")
	dir := fs.String("dir", "", "write the corpus here and keep it (default a temporary directory)")
	fs.Bool("json", true, "print JSON (always; accepted for scripts)")
	cpu := fs.String("cpuprofile", "", "write a CPU profile of the whole run to this file")
	ccusage := fs.String("ccusage", "", "ccusage binary timed beside spine's cost reports (default $SPINE_CCUSAGE, bin/ccusage-"+bench.CcusageVersion+" from make ccusage-parity, or ccusage on PATH)")
	runs := fs.Int("report-runs", bench.DefaultReportRuns, "times each cost report (spine's and ccusage's) is run; medians are printed")
	if err := parseNoArgs(fs, benchImportUsage, args); err != nil {
		return err
	}
	cfg := bench.ImportConfig{FixturesDir: *fixtures, Dir: *dir, Size: *size << 20, NodeSize: *nodeSize << 20,
		RealisticSize: *realistic << 20, RealisticCodex: *codex, Ccusage: *ccusage, ReportRuns: *runs, DatabaseURL: config.DatabaseURL(),
		Logger: benchLogger()}
	if *nodeSize == 0 {
		cfg.NodeSize = bench.NoNode
	}
	if *codex == 0 {
		cfg.RealisticCodex = bench.NoCodex
	}
	if *size <= 0 || *nodeSize < 0 || *runs <= 0 || *realistic <= 0 {
		return usageError{"bench import: --size, --realistic-size and --report-runs must be positive and --node-size not negative"}
	}
	if *codex < 0 || *codex > 100 {
		return usageError{"bench import: --realistic-codex is a percent, 0 to 100"}
	}
	for _, sh := range strings.Split(*shape, ",") {
		if sh = strings.TrimSpace(sh); sh == "" {
			continue
		}
		if !slices.Contains(bench.Shapes, sh) {
			return usageError{fmt.Sprintf("bench import: no shape %q (shapes: %s)", sh, strings.Join(bench.Shapes, ", "))}
		}
		cfg.Shapes = append(cfg.Shapes, sh)
	}
	for _, f := range strings.Split(*formats, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		pf, err := apps.ParseFormat(f)
		if err != nil {
			return usageError{err.Error()}
		}
		cfg.Formats = append(cfg.Formats, pf)
	}
	stop, err := startCPUProfile(*cpu)
	if err != nil {
		return err
	}
	res, err := bench.RunImport(ctx, cfg)
	stop()
	return printBenchResult(res, err)
}
