package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"sort"

	"github.com/spinehq/spine/internal/config"
	"github.com/spinehq/spine/node"
)

func runRebuild(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("rebuild", flag.ContinueOnError)
	verify := fs.Bool("verify", false, "compare a checksum of every projection with the live one; exit 1 if any differs")
	keep := fs.Bool("keep", false, "keep the rebuilt database (its name is printed) instead of dropping it")
	asJSON := fs.Bool("json", false, "print the result as JSON")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), `usage: spine rebuild [--verify] [--keep] [--json]

Replays the streams into a fresh database with every projector spine runs.
The log is SPINE_NATS_URL, else a running spine's embedded server
(SPINE_NATS_LISTEN), else the embedded store under SPINE_DATA_DIR.`)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	cfg, err := config.FromEnv()
	if err != nil {
		return err
	}
	ro := node.RebuildOptions{Verify: *verify, Keep: *keep}
	if isTerminal(os.Stderr) {
		ro.Progress = func(name string, done, total uint64) {
			fmt.Fprintf(os.Stderr, "\r%-40s %d/%d", name, done, total)
		}
	}
	res, err := node.Rebuild(ctx, cfg, logger(false), ro)
	if isTerminal(os.Stderr) {
		fmt.Fprintln(os.Stderr)
	}
	if err != nil {
		return err
	}
	if *asJSON {
		_ = json.NewEncoder(stdout).Encode(res)
	} else {
		printRebuild(res, *verify)
	}
	if *verify && !res.Verified {
		return fmt.Errorf("%d projections differ from the log", len(res.Differ))
	}
	return nil
}

func printRebuild(res *node.RebuildResult, verify bool) {
	state := "dropped"
	if res.Kept {
		state = "kept"
	}
	fmt.Fprintf(stdout, "rebuilt into database %s (%s) in %.1fs\n", res.Database, state, res.Seconds)
	if !verify {
		return
	}
	tables := make([]string, 0, len(res.Live))
	for t := range res.Live {
		tables = append(tables, t)
	}
	sort.Strings(tables)
	differ := map[string]bool{}
	for _, t := range res.Differ {
		differ[t] = true
	}
	for _, t := range tables {
		mark := "same"
		if differ[t] {
			mark = "DIFFERS"
		}
		fmt.Fprintf(stdout, "  %-24s %-8s live %s  rebuilt %s\n", t, mark, res.Live[t], res.Rebuilt[t])
	}
}
