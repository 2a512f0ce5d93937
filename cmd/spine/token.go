package main

import (
	"context"
	"flag"
	"fmt"
	"path/filepath"
	"time"

	"github.com/spinehq/spine/auth"
	"github.com/spinehq/spine/internal/config"
)

func runToken(ctx context.Context, args []string) error {
	if len(args) == 0 || args[0] != "mint" {
		return usageError{"usage: spine token mint [--org O] [--member M] [--ttl 24h]"}
	}
	fs := flag.NewFlagSet("token mint", flag.ContinueOnError)
	org := fs.String("org", "dev", "org the token acts in")
	member := fs.String("member", "dev", "member the token acts as")
	ttl := fs.Duration("ttl", 24*time.Hour, "lifetime")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	signer, err := loadSigner()
	if err != nil {
		return err
	}
	tok, err := signer.Mint(auth.Claims{Org: *org, Member: *member}, *ttl)
	if err != nil {
		return err
	}
	fmt.Fprintln(stdout, tok)
	return nil
}

// loadSigner uses SPINE_TOKEN_SECRET, else the secret spine serve keeps in its data dir.
func loadSigner() (*auth.Signer, error) {
	cfg, err := config.FromEnv()
	if err != nil {
		return nil, err
	}
	var secret []byte
	if cfg.TokenSecret != "" {
		secret, err = auth.DecodeSecret(cfg.TokenSecret)
	} else {
		secret, err = auth.LoadOrCreateSecret(filepath.Join(cfg.DataDir, "token.secret"))
	}
	if err != nil {
		return nil, fmt.Errorf("token secret (set %s or run from spine's working directory): %w", config.EnvTokenSecret, err)
	}
	return auth.NewSigner(secret)
}
