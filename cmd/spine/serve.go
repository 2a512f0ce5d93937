package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"

	"github.com/spinehq/spine/internal/config"
	"github.com/spinehq/spine/migrations"
	"github.com/spinehq/spine/node"

	"github.com/jackc/pgx/v5"
	"github.com/spinehq/spine/internal/pgboot"
)

func logger(verbose bool) *slog.Logger {
	level := slog.LevelInfo
	if verbose {
		level = slog.LevelDebug
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
}

func runServe(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	verbose := fs.Bool("v", false, "debug logging")
	if err := fs.Parse(args); err != nil {
		return err
	}
	cfg, err := config.FromEnv()
	if err != nil {
		return err
	}
	log := logger(*verbose)
	n, err := node.Start(ctx, cfg, log, nil)
	if err != nil {
		return err
	}
	tok, err := n.DevToken()
	if err != nil {
		n.Stop()
		return err
	}
	fmt.Fprintf(os.Stderr, "\nspine is serving\n  http      http://%s  (/healthz /readyz /metrics /v1/...)\n", n.HTTPAddr())
	if u := n.NATSURL(); u != "" {
		fmt.Fprintf(os.Stderr, "  nats      %s\n", u)
	}
	fmt.Fprintf(os.Stderr, "  postgres  %s\n  data      %s\n\nA development token (org dev, member dev, 24h):\n  export SPINE_TOKEN=%s\n\n",
		n.PostgresSource(), cfg.DataDir, tok)
	<-ctx.Done()
	log.Info("shutting down: draining projectors")
	n.Stop()
	log.Info("stopped")
	return nil
}

func runMigrate(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("migrate", flag.ContinueOnError)
	if err := fs.Parse(args); err != nil {
		return err
	}
	cfg, err := config.FromEnv()
	if err != nil {
		return err
	}
	res, err := pgboot.Find(ctx, pgboot.Options{URL: cfg.DatabaseURL, DataDir: cfg.DataDir, Logger: logger(false)})
	if err != nil {
		return err
	}
	defer res.Stop()
	conn, err := pgx.Connect(ctx, res.URL)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	applied, err := migrations.Up(ctx, conn)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "migrations applied: %v (postgres: %s)\n", applied, res.Source)
	return nil
}
