package main

import (
	"context"
	"flag"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/spinehq/spine/internal/config"
	"github.com/spinehq/spine/internal/pgboot"
	"github.com/spinehq/spine/migrations"
)

// runMigrate is spine migrate: apply the embedded migrations to the
// PostgreSQL spine serve would use, and exit.
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
