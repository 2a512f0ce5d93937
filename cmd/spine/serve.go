package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/spinehq/spine/internal/config"
	"github.com/spinehq/spine/node"
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
	if err := printServing(os.Stderr, isTerminal(os.Stderr), n, cfg); err != nil {
		n.Stop()
		return err
	}
	<-ctx.Done()
	log.Info("shutting down: draining projectors")
	n.Stop()
	log.Info("stopped")
	return nil
}

// printServing says where spine serves. A development token is printed
// only on a terminal: a log file keeps what it is given, and a token in it
// is a credential for anyone who reads the log. Elsewhere it prints the
// command that mints one.
func printServing(w io.Writer, terminal bool, n *node.Node, cfg config.Config) error {
	fmt.Fprintf(w, "\nspine is serving\n  http      http://%s  (/healthz /readyz /metrics /v1/...)\n", n.HTTPAddr())
	if u := n.NATSURL(); u != "" {
		fmt.Fprintf(w, "  nats      %s%s\n", node.RedactNATSURL(u), natsTokenNote(cfg))
	}
	fmt.Fprintf(w, "  postgres  %s\n  data      %s\n\n", n.PostgresSource(), cfg.DataDir)
	if !terminal {
		mint := fmt.Sprintf("%s=%s spine token mint --org dev --member dev", config.EnvDataDir, cfg.DataDir)
		if cfg.TokenSecret != "" {
			mint = fmt.Sprintf("spine token mint --org dev --member dev  (with this server's %s set)", config.EnvTokenSecret)
		}
		fmt.Fprintf(w, "No development token is printed: stderr is not a terminal, and a log must not hold one.\n"+
			"Mint one with:\n  %s\n\n", mint)
		return nil
	}
	tok, err := n.DevToken()
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "A development token (org dev, member dev, 24h):\n  export SPINE_TOKEN=%s\n\n", tok)
	return nil
}

// natsTokenNote says where the embedded server's client token is (never
// the token itself).
func natsTokenNote(cfg config.Config) string {
	switch {
	case cfg.NATSURL != "":
		return ""
	case cfg.NATSToken != "":
		return "  (clients present " + config.EnvNATSToken + ")"
	}
	return "  (clients present the token in " + cfg.NATSTokenPath() + ")"
}
