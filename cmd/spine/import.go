package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/spinehq/spine/apps"
	"github.com/spinehq/spine/importer"
	"github.com/spinehq/spine/streams"
)

func runImport(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("import", flag.ContinueOnError)
	app := fs.String("app", "", "only files of this app: claude-code or codex (default both)")
	format := fs.String("format", "", fmt.Sprintf("force the format of every file: one of %v (default: detect per file)", apps.Formats))
	billing := fs.String("billing", "", "stamp imported sessions subscription or metered (default: what the output says, else unknown)")
	asJSON := fs.Bool("json", false, "print the summary as JSON")
	allSessions := fs.Bool("all-sessions", false, fmt.Sprintf("list every session in the JSON summary (default: the first %d; totals count them all)", importer.MaxSessionsListed))
	dryRun := fs.Bool("dry-run", false, "read and count everything, publish nothing")
	urlFlag := fs.String("url", "", "spine HTTP API (default $SPINE_URL or http://127.0.0.1:7070)")
	token := fs.String("token", "", "bearer token (default $SPINE_TOKEN); imported sessions belong to its member")
	natsURL := fs.String("nats", "", "publish straight to this NATS server instead of HTTP ingest (trusted producers; credentials as for spine publish --nats)")
	org := fs.String("org", "dev", "with --nats: the org that owns the imported sessions")
	member := fs.String("member", "dev", "with --nats: the member who owns the imported sessions")
	batch := fs.Int("batch", 500, "envelopes per HTTP request")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: spine import [flags] PATH...\n\nImports Claude Code and Codex output (files or directories, recursively).\nRe-importing the same files changes nothing.")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		fs.Usage()
		return usageError{"import needs at least one PATH"}
	}
	f, err := apps.ParseFormat(*format)
	if err != nil {
		return usageError{err.Error()}
	}
	opts := importer.Options{App: *app, Format: f, Billing: *billing, AllSessions: *allSessions,
		Owner: streams.Owner{Org: *org, Member: *member}, Progress: importProgress()}
	switch {
	case *dryRun:
	case *natsURL != "":
		nc, err := dialNATS(*natsURL)
		if err != nil {
			return err
		}
		defer nc.Close()
		js, err := jetstream.New(nc)
		if err != nil {
			return err
		}
		if opts.Sink, err = importer.NewJetStreamSink(ctx, js); err != nil {
			return err
		}
	default:
		c, err := newClient(*urlFlag, *token)
		if err != nil {
			return err
		}
		opts.Sink = importer.NewHTTPSink(c, *batch)
	}
	sum, err := importer.Import(ctx, fs.Args(), opts)
	if errors.Is(err, importer.ErrBadOption) || errors.Is(err, apps.ErrUnknownFormat) {
		return usageError{err.Error()}
	}
	if isTerminal(os.Stderr) {
		fmt.Fprintln(os.Stderr)
	}
	if sum != nil {
		if perr := printImport(sum, *asJSON); err == nil {
			err = perr
		}
	}
	return err
}

// importProgress draws a progress bar on a terminal, nothing otherwise.
func importProgress() func(importer.Progress) {
	if !isTerminal(os.Stderr) {
		return nil
	}
	return func(p importer.Progress) {
		pct := 100.0
		if p.TotalBytes > 0 {
			pct = float64(p.Bytes) * 100 / float64(p.TotalBytes)
		}
		bar := strings.Repeat("#", int(pct/5)) + strings.Repeat(".", 20-int(pct/5))
		fmt.Fprintf(os.Stderr, "\r[%s] %5.1f%%  %d/%d files  %.1f/%.1f MB  %d sessions", bar, pct, p.Files,
			p.TotalFiles, float64(p.Bytes)/1e6, float64(p.TotalBytes)/1e6, p.Sessions)
	}
}

func printImport(sum *importer.Summary, asJSON bool) error {
	if asJSON {
		return json.NewEncoder(stdout).Encode(sum)
	}
	verb := "imported"
	if sum.DryRun {
		verb = "would import (dry run)"
	}
	t := sum.Tokens
	fmt.Fprintf(stdout, "%s %d sessions, %d responses from %d files (%d lines, %.1f MB)\n", verb, sum.Sessions,
		sum.Responses, sum.Files, sum.Lines, float64(sum.Bytes)/1e6)
	fmt.Fprintf(stdout, "tokens: %d = input %d (cache read %d, cache write %d) + output %d (reasoning %d)\n",
		t.Total, t.Input, t.CacheRead, t.CacheWrite, t.Output, t.Reasoning)
	if sum.AlreadyRecorded > 0 {
		fmt.Fprintf(stdout, "%d sessions were already recorded: nothing of theirs was published again\n", sum.AlreadyRecorded)
	}
	if sum.RepairedLines > 0 {
		fmt.Fprintf(stdout, "%d lines had bytes that are not UTF-8: imported with U+FFFD in their place\n", sum.RepairedLines)
	}
	for _, s := range sum.Skipped {
		fmt.Fprintf(stdout, "  skipped %s:%d: %s\n", s.File, s.Line, s.Reason)
	}
	if more := sum.SkippedTotal - len(sum.Skipped); more > 0 {
		fmt.Fprintf(stdout, "  … and %d more skipped lines\n", more)
	}
	for _, r := range sum.Refused {
		fmt.Fprintf(stdout, "  refused %s: %s: %s\n", r.ID, r.Code, r.Reason)
	}
	if len(sum.Refused) > 0 {
		return fmt.Errorf("%d envelopes refused", len(sum.Refused))
	}
	return nil
}
