package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"slices"
	"strings"
	"time"

	"github.com/spinehq/spine/auth"
	"github.com/spinehq/spine/internal/config"
)

const tokenUsage = "usage: spine token init | spine token mint [--org O] [--member M] [--role member|admin] [--ingest] [--billing subscription|metered] [--ttl 24h]"

func runToken(ctx context.Context, args []string) error {
	if len(args) == 0 {
		return usageError{tokenUsage}
	}
	switch args[0] {
	case "mint":
		return runTokenMint(args[1:])
	case "init":
		return runTokenInit(args[1:])
	}
	return usageError{tokenUsage}
}

func runTokenMint(args []string) error {
	fs := flag.NewFlagSet("token mint", flag.ContinueOnError)
	org := fs.String("org", "dev", "org the token acts in")
	member := fs.String("member", "dev", "member the token acts as")
	role := fs.String("role", auth.RoleMember, "member or admin (an org admin sets plan budgets and sees the whole org's cost)")
	ingest := fs.Bool("ingest", false, "an org's ingest token for the telemetry doors, an admin's (it records as the members mapped with spine members map)")
	billing := fs.String("billing", "", "subscription or metered: how the apps sending with this token are billed (default: unclaimed)")
	ttl := fs.Duration("ttl", 24*time.Hour, "lifetime")
	if err := fs.Parse(args); err != nil {
		return err
	}
	c, err := mintClaims(*org, *member, *role, *billing, *ingest, roleSet(fs))
	if err != nil {
		return err
	}
	signer, err := loadSigner()
	if err != nil {
		return err
	}
	tok, err := signer.Mint(c, *ttl)
	if err != nil {
		return err
	}
	fmt.Fprintln(stdout, tok)
	return nil
}

// mintClaims are the claims token mint's flags ask for. An ingest token
// records as any member an admin mapped, so it is an admin's: --ingest
// mints the admin role, and refuses --role member.
func mintClaims(org, member, role, billing string, ingest, roleGiven bool) (auth.Claims, error) {
	if !slices.Contains(auth.Roles, role) {
		return auth.Claims{}, usageError{fmt.Sprintf("--role %q: want one of %s", role, strings.Join(auth.Roles, ", "))}
	}
	if billing != "" && !slices.Contains(auth.Billings, billing) {
		return auth.Claims{}, usageError{fmt.Sprintf("--billing %q: want one of %s", billing, strings.Join(auth.Billings, ", "))}
	}
	c := auth.Claims{Org: org, Member: member, Role: role, Billing: billing}
	if ingest {
		if roleGiven && role != auth.RoleAdmin {
			return auth.Claims{}, usageError{"--ingest: an ingest token is an org admin's (it records as any member an admin mapped); drop --role member"}
		}
		c.Role, c.Audience = auth.RoleAdmin, auth.AudienceIngest
	}
	return c, nil
}

// roleSet reports whether --role was given.
func roleSet(fs *flag.FlagSet) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == "role" })
	return set
}

// runTokenInit creates the data dir's token secret if there is none: the
// one way besides `spine serve` to make one.
func runTokenInit(args []string) error {
	flags := flag.NewFlagSet("token init", flag.ContinueOnError)
	if err := flags.Parse(args); err != nil {
		return err
	}
	cfg, err := config.FromEnv()
	if err != nil {
		return err
	}
	if cfg.TokenSecret != "" {
		fmt.Fprintf(stdout, "%s is set: spine signs with it, no file is needed\n", config.EnvTokenSecret)
		return nil
	}
	path := cfg.TokenSecretPath()
	if _, err := auth.LoadSecret(path); err == nil {
		fmt.Fprintf(stdout, "token secret exists: %s\n", path)
		return nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if _, err := auth.LoadOrCreateSecret(path); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "created token secret %s (a spine serve with %s=%s signs with it)\n", path, config.EnvDataDir, cfg.DataDir)
	return nil
}

// loadSigner uses SPINE_TOKEN_SECRET, else the secret in the data dir. It
// never creates one: a token signed with a secret no server has would be
// refused, so a missing secret is an error that says where it looked.
func loadSigner() (*auth.Signer, error) {
	cfg, err := config.FromEnv()
	if err != nil {
		return nil, err
	}
	if cfg.TokenSecret != "" {
		secret, err := auth.DecodeSecret(cfg.TokenSecret)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", config.EnvTokenSecret, err)
		}
		return auth.NewSigner(secret)
	}
	path := cfg.TokenSecretPath()
	secret, err := auth.LoadSecret(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("no token secret: %s is not set and %s does not exist. "+
			"Run this where spine serve runs (or set %s to its data dir), or set %s to the server's secret; "+
			"to start a new deployment, spine token init creates %s", config.EnvTokenSecret, path,
			config.EnvDataDir, config.EnvTokenSecret, path)
	}
	if err != nil {
		return nil, err
	}
	return auth.NewSigner(secret)
}
