package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/spinehq/spine/collect"
	"github.com/spinehq/spine/importer"
)

func runCollect(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("collect", flag.ContinueOnError)
	home, _ := os.UserHomeDir()
	claudeDir := fs.String("claude-dir", filepath.Join(home, ".claude"), "Claude Code's directory (its projects/ are collected; \"\" for none)")
	codexDir := fs.String("codex-dir", filepath.Join(home, ".codex"), "Codex's directory (its sessions/ are collected; \"\" for none)")
	machine := fs.String("machine", "", "this machine's name, every collected session's workerId (default: the host name)")
	once := fs.Bool("once", false, "read everything present and exit")
	idle := fs.Duration("idle", collect.DefaultIdle, "end a session whose files have had no new line for this long (by modification time; 0: never); later lines are a new session with the same appSessionRef")
	statePath := fs.String("state", "", "the file keeping how far each file was sent (default: collect-state.json in spine's user config dir)")
	urlFlag := fs.String("url", "", "spine HTTP API (default $SPINE_URL or http://127.0.0.1:7070)")
	token := fs.String("token", "", "bearer token (default $SPINE_TOKEN); collected sessions belong to its member")
	verbose := fs.Bool("v", false, "log skipped lines and retries")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: spine collect [flags]\n\nSends every Claude Code and Codex session on this machine to spine as the apps write it,\nand goes on from where it was after a restart. See docs/collect.md.")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		fs.Usage()
		return usageError{"collect takes no arguments"}
	}
	level := slog.LevelWarn
	if *verbose {
		level = slog.LevelInfo
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	for {
		// A collector that failed (spine unreachable, say) is made anew: it
		// reads the saved offsets again, so what spine did not accept is
		// sent again and nothing twice.
		c, err := newClient(*urlFlag, *token)
		if err != nil {
			return err
		}
		col, err := collect.New(collect.Options{ClaudeDir: *claudeDir, CodexDir: *codexDir, Machine: *machine,
			StatePath: *statePath, Sink: importer.NewHTTPSink(c, 500), Idle: idleOption(*idle), Logger: log,
			ClaimsDir: claimsDir()})
		if errors.Is(err, collect.ErrBadOption) {
			return usageError{err.Error()}
		}
		if err != nil {
			return err
		}
		if *once {
			return col.Once(ctx)
		}
		err = col.Run(ctx)
		if err == nil || ctx.Err() != nil {
			return nil
		}
		var se interface{ HTTPStatus() int }
		if errors.As(err, &se) && (se.HTTPStatus() == http.StatusUnauthorized || se.HTTPStatus() == http.StatusForbidden) {
			// Starting again would be refused the same way, forever.
			return fmt.Errorf("spine refused the token (check --token or $SPINE_TOKEN): %w", err)
		}
		log.Warn("collect failed: starting again", "err", err, "in", collectRetry)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(collectRetry):
		}
	}
}

// idleOption is --idle as collect.Options.Idle: 0 (never) is below 0 there.
func idleOption(d time.Duration) time.Duration {
	if d <= 0 {
		return -1
	}
	return d
}

// collectRetry is the wait before a failed collector starts again.
const collectRetry = 5 * time.Second

// claimsDir is where spine run claims the sessions it records, for a
// collector on the same machine to leave alone (collect.Claim): beside the
// default spool directory ($SPINE_SPOOL_DIR, else spine/spool in the
// user's config dir), whatever --spool a run was given. "" when there is
// none.
func claimsDir() string {
	dir, err := spoolDir("")
	if err != nil {
		return ""
	}
	return collect.DefaultClaimsDir(dir)
}

// claimSession claims an app session spine run (or the runner) records,
// before anything of it is sent. A claim that cannot be made is said once
// on stderr: the run goes on, and a collector on this machine may record
// the session too.
func claimSession(sessionID string) {
	dir := claimsDir()
	if dir == "" {
		return
	}
	if err := collect.Claim(dir, sessionID); err != nil {
		fmt.Fprintf(os.Stderr, "spine run: %v (a spine collect here may record the session too)\n", err)
	}
}

// markRun marks spine run (or the runner's task) as running until the
// returned func is called, so a collector on this machine waits for the
// claims it makes (collect.MarkRun). A mark that cannot be made is said on
// stderr: the run goes on, and a collector here may record its session.
func markRun() (release func()) {
	dir := claimsDir()
	if dir == "" {
		return func() {}
	}
	release, err := collect.MarkRun(dir)
	if err != nil {
		fmt.Fprintf(os.Stderr, "spine run: %v (a spine collect here may record the session too)\n", err)
		return func() {}
	}
	return release
}
