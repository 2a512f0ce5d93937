// Command spine records coding-agent sessions and serves them back.
//
//	spine serve [-v]                  run spine (embedded NATS, PostgreSQL found or started)
//	spine migrate                     apply database migrations and exit
//	spine publish [--nats URL] FILE.jsonl|-   send envelopes from a file
//	spine import [flags] PATH...      import Claude Code and Codex output
//	spine collect [--claude-dir D] [--codex-dir D] [--machine M] [--once] [--state F] [--idle D]
//	                                  send this machine's sessions to spine as the apps write them
//	spine run [--app A] [flags] -- ARGS...   run Claude Code or Codex, recorded live
//	spine runner login [--url U] [--token T] [--machine M]; spine runner [--config F] [--confirm] [--once] [--json]
//	                                  run remote-session tasks on this machine
//	spine spool [--spool DIR] [--drop FILE]  deliver (or give up) what earlier spine runs left in the spool
//	spine read session|transcript|steps ID [--json] [--follow]
//	spine cancel ID [--reason R]      cancel a running session
//	spine rebuild [--verify] [--keep] replay the streams into a fresh database
//	spine trace DIGEST|ARTIFACT|SESSION|PLAN_RUN|PLAN [--json]
//	spine token init                  create the token secret in the data dir
//	spine token mint [--org O] [--member M] [--role member|admin] [--ingest] [--billing B] [--ttl D]
//	spine cost [--from D] [--to D] [--group-by G] [--json]; spine cost plan ID
//	spine deadletters [STREAM:SEQ] [--limit N] [--after C] [--json]
//	spine members map KIND VALUE MEMBER | unmap KIND VALUE | mapped | unmapped [--json]
//	spine bench ingest|library|dispatch|import|fairness|flood|lag|ui [flags]
//
// Settings come from SPINE_* environment variables (internal/config, listed
// in the README); the reference for each command is in docs/.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

type command struct {
	name, usage string
	run         func(ctx context.Context, args []string) error
}

func commands() []command {
	return []command{
		{"serve", "run spine: NATS, PostgreSQL, projectors and the HTTP API", runServe},
		{"migrate", "apply database migrations and exit", runMigrate},
		{"publish", "publish envelopes from a JSON-lines file (FILE or - for stdin)", runPublish},
		{"import", "import Claude Code and Codex output (files or directories)", runImport},
		{"collect", "send this machine's Claude Code and Codex sessions to spine live, as the apps write them", runCollect},
		{"run", "run Claude Code or Codex headless and record the session as it runs (run -- ARGS...)", runRun},
		{"runner", "run this member's remote-session tasks on this machine, as its runner config allows (runner login first)", runRunner},
		{"spool", "deliver what earlier spine runs left in the spool (spine unreachable when they ended)", runSpool},
		{"read", "read a session, its transcript or a run's steps", runRead},
		{"cancel", "cancel a running session (its producer is told; spine ends it after a grace)", runCancel},
		{"rebuild", "replay the streams into a fresh database; --verify compares with the live projections", runRebuild},
		{"trace", "follow a file, artifact or session to what produced it, or a plan down to every session it ran", runTrace},
		{"token", "create the token secret (token init) or mint a bearer token (token mint --org O --member M --role R)", runToken},
		{"cost", "cost reports: calls, tokens and reported dollars by billing; plan spend", runCost},
		{"deadletters", "your envelopes refused after they were accepted, with the reason", runDeadLetters},
		{"members", "map the apps' telemetry identities to members, for an org ingest token; list the unmapped (admins)", runMembers},
		{"bench", "benchmarks, each beside a raw baseline: ingest, library, dispatch, import, fairness, flood, lag, ui, otlp", runBench},
	}
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	if err := run(ctx, os.Args[1:]); err != nil {
		var app appExit
		if !errors.Is(err, flag.ErrHelp) && !errors.As(err, &app) {
			fmt.Fprintln(os.Stderr, "spine:", err)
		}
		os.Exit(exitCode(err))
	}
}

func run(ctx context.Context, args []string) error {
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		usage()
		return nil
	}
	for _, c := range commands() {
		if c.name == args[0] {
			return c.run(ctx, args[1:])
		}
	}
	usage()
	return usageError{fmt.Sprintf("unknown command %q", args[0])}
}

func usage() {
	fmt.Fprintln(os.Stderr, "spine records coding-agent sessions and serves them back.\n\nUsage: spine COMMAND [flags]\n\nCommands:")
	for _, c := range commands() {
		fmt.Fprintf(os.Stderr, "  %-11s %s\n", c.name, c.usage)
	}
	fmt.Fprintln(os.Stderr, "\nRun 'spine COMMAND -h' for a command's flags. Settings come from SPINE_* variables (see README).")
}

type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func exitCode(err error) int {
	var app appExit
	if errors.As(err, &app) {
		return int(app) // spine run exits as the app did
	}
	var u usageError
	if errors.As(err, &u) || errors.Is(err, flag.ErrHelp) {
		return 2
	}
	return 1
}

// stdout is where commands write their results (tests capture it).
var stdout io.Writer = os.Stdout
