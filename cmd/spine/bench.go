package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime/pprof"
	"time"

	"github.com/spinehq/spine/internal/bench"
	"github.com/spinehq/spine/internal/config"
)

const benchUsage = `usage: spine bench ingest [flags]
       spine bench library [flags] (see spine bench library -h)
       spine bench dispatch [flags] (see spine bench dispatch -h)
       spine bench import [flags] (see spine bench import -h)
       spine bench fairness [flags] (see spine bench fairness -h)
       spine bench flood --url U --token T [flags] (see spine bench flood -h)
       spine bench lag [flags] (see spine bench lag -h)
       spine bench ui [flags] (see spine bench ui -h)
       spine bench otlp [flags] (see spine bench otlp -h)

ingest sends the same sessions through spine (publisher → JetStream →
recorder → PostgreSQL) and through a raw baseline (plain JetStream publish,
pull fetch, one COPY per batch, tuned for itself: "rawTuning") in one run, then offers chunks at a fixed
rate to measure publish → committed latency. It prints one JSON object on
stdout; "ratio" is spine's chunks/s over raw's; "redaction" repeats spine's
burst with redaction at the door off and gives both ratios and the cost.
It uses a fresh temporary data directory and a database
spine_bench_<random> on the PostgreSQL that spine serve would find ($SPINE_DATABASE_URL, 127.0.0.1:5432, or a private
cluster), and removes both at the end. It exits 1 if the projections do not
match what was sent.

--instances N starts N nodes on the same database and log and deals sessions
to them in turn ("scale" in the JSON says what each did: today one instance
leads the recorder and the others stand by). --cluster puts the log on three
in-process nats-servers at replicas 3, the raw baseline's stream too.
--duration D replaces the phases with a soak: --rate chunks/s for D, sessions
ending after --chunks chunks and replaced, resident memory sampled ("soak").

Flags of ingest:
`

func runBench(ctx context.Context, args []string) error {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fs, _ := ingestFlags()
		fs.SetOutput(os.Stderr)
		fs.Usage()
		if len(args) == 0 {
			return usageError{"bench needs a benchmark: ingest, library, dispatch, import, fairness, flood, lag, ui or otlp"}
		}
		return flag.ErrHelp
	}
	if args[0] == "library" {
		return runBenchLibrary(ctx, args[1:])
	}
	if args[0] == "dispatch" {
		return runBenchDispatch(ctx, args[1:])
	}
	if args[0] == "import" {
		return runBenchImport(ctx, args[1:])
	}
	if args[0] == "fairness" {
		return runBenchFairness(ctx, args[1:])
	}
	if args[0] == "flood" {
		return runBenchFlood(ctx, args[1:])
	}
	if args[0] == "lag" {
		return runBenchLag(ctx, args[1:])
	}
	if args[0] == "ui" {
		return runBenchUI(ctx, args[1:])
	}
	if args[0] == "otlp" {
		return runBenchOTLP(ctx, args[1:])
	}
	if args[0] != "ingest" {
		return usageError{fmt.Sprintf("bench: unknown benchmark %q (want ingest, library, dispatch, import, fairness, flood, lag, ui or otlp)", args[0])}
	}
	return runBenchIngest(ctx, args[1:])
}

// ingestOpts are the command-line knobs beyond bench.Config.
type ingestOpts struct {
	latency      float64
	events       float64
	cpuProfile   string
	burstProfile string
	heapProfile  string
}

func ingestFlags() (*flag.FlagSet, func() (bench.Config, ingestOpts)) {
	fs := flag.NewFlagSet("bench ingest", flag.ContinueOnError)
	sessions := fs.Int("sessions", bench.DefaultSessions, "sessions per phase")
	chunks := fs.Int("chunks", bench.DefaultChunks, "chunks per session in the throughput phases")
	payload := fs.Int("payload", bench.DefaultPayload, "bytes of text per chunk")
	rate := fs.Int("rate", bench.DefaultRate, "chunks/s offered in the latency phase")
	latency := fs.Float64("latency-seconds", bench.DefaultLatencyDuration.Seconds(), "duration of the latency phase (0 skips it)")
	batch := fs.Int("batch", bench.DefaultBatch, "projector batch size (the raw path has its own tuning: the JSON's rawTuning)")
	events := fs.Float64("events", bench.DefaultEvents, "fraction of chunks that are command events")
	fs.Bool("json", true, "print JSON (always; accepted for scripts)")
	cpu := fs.String("cpuprofile", "", "write a CPU profile of the whole run to this file")
	burstCPU := fs.String("burst-cpuprofile", "", "write a CPU profile of spine's first burst alone to this file (not with --cpuprofile or --duration)")
	heap := fs.String("heapprofile", "", "with --duration: write a heap profile to this file, taken after a GC once the soak's last chunk is committed")
	instances := fs.Int("instances", 1, "spine nodes sharing the database and the log")
	partitions := fs.Int("partitions", 1, "split the recorder by session id into this many partitions shared by the instances (SPINE_PARTITIONS); 1: one recorder leads, the others stand by")
	cluster := fs.Bool("cluster", false, "run the log on three in-process nats-servers, streams at replicas 3")
	duration := fs.Duration("duration", 0, "soak instead: offer --rate chunks/s for this long (sessions of --chunks chunks), sampling memory")
	dupWindow := fs.Duration("duplicate-window", 0, "what-if: set SPINE_SESSIONS's duplicate window (JetStream keeps every message id that long; 0 keeps spine's)")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), benchUsage)
		fs.PrintDefaults()
	}
	return fs, func() (bench.Config, ingestOpts) {
		cfg := bench.Config{Sessions: *sessions, Chunks: *chunks, Payload: *payload, Rate: *rate,
			LatencyDuration: time.Duration(*latency * float64(time.Second)), Batch: *batch, Events: *events,
			DatabaseURL: config.DatabaseURL(), Instances: *instances, Cluster: *cluster, Duration: *duration,
			DuplicateWindow: *dupWindow, Partitions: *partitions}
		return cfg, ingestOpts{latency: *latency, events: *events, cpuProfile: *cpu, burstProfile: *burstCPU, heapProfile: *heap}
	}
}

func runBenchIngest(ctx context.Context, args []string) error {
	fs, parsed := ingestFlags()
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		fs.Usage()
		return usageError{fmt.Sprintf("bench ingest takes no arguments, got %q", fs.Args())}
	}
	cfg, opts := parsed()
	if opts.events == 0 {
		cfg.Events = bench.NoEvents
	}
	if opts.latency == 0 {
		cfg.LatencyDuration = bench.NoLatency
	}
	cfg.Logger = benchLogger()
	switch {
	case opts.burstProfile != "" && (opts.cpuProfile != "" || cfg.Duration > 0):
		return usageError{"bench ingest: --burst-cpuprofile profiles the first burst: not with --cpuprofile (one profile at a time) or --duration (a soak has no burst)"}
	case opts.heapProfile != "" && cfg.Duration <= 0:
		return usageError{"bench ingest: --heapprofile is taken at a soak's end: give --duration"}
	}
	var profiles []*os.File
	for _, p := range []struct {
		path string
		to   *io.Writer
	}{{opts.burstProfile, &cfg.BurstProfile}, {opts.heapProfile, &cfg.HeapProfile}} {
		if p.path == "" {
			continue
		}
		f, err := os.Create(p.path)
		if err != nil {
			return fmt.Errorf("profile: %w", err)
		}
		profiles = append(profiles, f)
		*p.to = f
	}
	stop, err := startCPUProfile(opts.cpuProfile)
	if err != nil {
		return errors.Join(err, closeAll(profiles))
	}
	res, err := bench.Run(ctx, cfg)
	stop()
	err = errors.Join(err, closeAll(profiles))
	if res == nil {
		return err
	}
	// A result with an error failed only its cleanup: the figures stand.
	return errors.Join(printBench(res), err)
}

// closeAll closes the profiles' files: a write lost to a full disk shows
// as the close's error, not as a truncated profile.
func closeAll(files []*os.File) error {
	var errs []error
	for _, f := range files {
		if err := f.Close(); err != nil {
			errs = append(errs, fmt.Errorf("profile: %w", err))
		}
	}
	return errors.Join(errs...)
}

// benchLogger shows progress only to a person watching: stdout carries the
// JSON and stderr may be a file a script keeps.
func benchLogger() *slog.Logger {
	if !isTerminal(os.Stderr) {
		return slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return slog.New(slog.NewTextHandler(os.Stderr, nil))
}

func startCPUProfile(path string) (stop func(), err error) {
	if path == "" {
		return func() {}, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("cpu profile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("cpu profile: %w", err)
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}

func printBench(res *bench.Result) error {
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	if err := enc.Encode(res); err != nil {
		return err
	}
	if !res.Verified {
		return fmt.Errorf("%w: %+v", bench.ErrNotVerified, res.Checks)
	}
	return nil
}

// printBenchResult prints a bench's result as indented JSON on stdout and
// returns err: a bench that failed part way still prints what it measured.
func printBenchResult[T any](res *T, err error) error {
	if res == nil {
		return err
	}
	enc := json.NewEncoder(stdout)
	enc.SetIndent("", "  ")
	if perr := enc.Encode(res); perr != nil {
		return perr
	}
	return err
}

// parseNoArgs parses a command that takes flags only: usage heads its -h,
// and an argument is a usage error naming the command (fs's name).
func parseNoArgs(fs *flag.FlagSet, usage string, args []string) error {
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), usage)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		fs.Usage()
		return usageError{fmt.Sprintf("%s takes no arguments, got %q", fs.Name(), fs.Args())}
	}
	return nil
}
