package main

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"time"

	"github.com/spinehq/spine/internal/config"
)

// runnerLogin is `spine runner login`: with the member's token it mints a
// runner token for this machine through the member-only route (never over
// MCP) and keeps it, with the machine's persisted runnerId, in the user's
// config dir (docs/runner.md).
func runnerLogin(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("runner login", flag.ContinueOnError)
	urlFlag := fs.String("url", "", "spine HTTP API (default $SPINE_URL or http://127.0.0.1:7070)")
	token := fs.String("token", "", "the member's bearer token (default $SPINE_TOKEN, better: a flag's value is visible to ps); only used to mint the runner token")
	machine := fs.String("machine", "", "this machine's name, shown to the member (default the host name, or the name kept from an earlier login)")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: spine runner login [--url URL] [--token MEMBER_TOKEN] [--machine NAME]\n\nMints a runner token for this machine and keeps it in "+
			"the config dir (runner.json, mode 0600).")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	c, err := newClient(*urlFlag, *token)
	if err != nil {
		return err
	}
	path, err := runnerCredsPath()
	if err != nil {
		return err
	}
	prev, err := loadRunnerCreds(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	creds, err := mintRunnerCreds(ctx, c, prev, *machine)
	if err != nil {
		return err
	}
	if err := saveRunnerCreds(path, creds); err != nil {
		return err
	}
	revokePrevious(ctx, c, prev, creds)
	fmt.Fprintf(stdout, "runner %s (%s) signed in to %s until %s; kept in %s\n", creds.RunnerID, creds.Machine, creds.URL,
		creds.ExpiresAt.Local().Format(time.DateTime), path)
	return nil
}

// mintRunnerCreds mints a token for the runnerId kept from an earlier login
// (a fresh one the first time), for machine (else the kept name, else the
// host name).
func mintRunnerCreds(ctx context.Context, c *client, prev *runnerCreds, machine string) (*runnerCreds, error) {
	creds := &runnerCreds{}
	if prev != nil {
		*creds = *prev // a copy: prev still names the token to revoke
	}
	if creds.RunnerID == "" {
		creds.RunnerID = newRunnerID()
	}
	host, _ := os.Hostname()
	creds.Machine = cmp.Or(machine, creds.Machine, host, "desktop")
	body, _ := json.Marshal(map[string]string{"runnerId": creds.RunnerID})
	var tok struct {
		Token     string    `json:"token"`
		TokenID   string    `json:"tokenId"`
		ExpiresAt time.Time `json:"expiresAt"`
	}
	if err := c.do(ctx, http.MethodPost, "/v1/desktop-runner/tokens", body, &tok); err != nil {
		return nil, fmt.Errorf("mint a runner token: %w", err)
	}
	creds.URL, creds.Token, creds.TokenID, creds.ExpiresAt = c.base, tok.Token, tok.TokenID, tok.ExpiresAt
	return creds, nil
}

// revokePrevious revokes the token an earlier login kept, now that the new
// one is kept in its place: a machine holds one live runner token. One
// already gone (expired, revoked: 404) is no matter; another failure is
// told, and the token lasts until it expires. A token of another spine is
// left alone.
func revokePrevious(ctx context.Context, c *client, prev, now *runnerCreds) {
	if prev == nil || prev.TokenID == "" || prev.TokenID == now.TokenID || prev.URL != now.URL {
		return
	}
	err := c.do(ctx, http.MethodDelete, "/v1/desktop-runner/tokens/"+url.PathEscape(prev.TokenID), nil, &json.RawMessage{})
	var ae *apiError
	if err != nil && !(errors.As(err, &ae) && ae.Status == http.StatusNotFound) {
		fmt.Fprintf(os.Stderr, "spine runner login: revoke the previous runner token %s: %v (it lasts until %s)\n", prev.TokenID, err,
			prev.ExpiresAt.Local().Format(time.DateTime))
	}
}

// runnerCreds is what login keeps: where spine is, the machine's persisted
// runnerId and name, and its runner token.
type runnerCreds struct {
	URL       string    `json:"url"`
	RunnerID  string    `json:"runnerId"`
	Token     string    `json:"token"`
	TokenID   string    `json:"tokenId"`
	ExpiresAt time.Time `json:"expiresAt"`
	Machine   string    `json:"machine"`
}

// errLoginAgain is a runner token that is missing, expired or refused.
var errLoginAgain = errors.New("run `spine runner login` again")

// usable checks the kept token before it is used.
func (c *runnerCreds) usable(now time.Time) error {
	if c.Token == "" || c.URL == "" || c.RunnerID == "" {
		return fmt.Errorf("no runner token kept: %w", errLoginAgain)
	}
	if !c.ExpiresAt.IsZero() && !now.Before(c.ExpiresAt) {
		return fmt.Errorf("the runner token expired at %s: %w", c.ExpiresAt.Local().Format(time.DateTime), errLoginAgain)
	}
	return nil
}

// newRunnerID is a fresh persisted id for this machine.
func newRunnerID() string {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return "runner-" + hex.EncodeToString(b)
}

func runnerCredsPath() (string, error) {
	d, err := config.Dir()
	return filepath.Join(d, "runner.json"), err
}

func loadRunnerCreds(path string) (*runnerCreds, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var c runnerCreds
	if err := json.Unmarshal(data, &c); err != nil {
		return nil, fmt.Errorf("%s: %v: %w", path, err, errLoginAgain)
	}
	return &c, nil
}

// saveRunnerCreds writes the file whole (writeFileAtomic), readable by the
// user alone: it holds a token.
func saveRunnerCreds(path string, c *runnerCreds) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	data, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return err
	}
	return writeFileAtomic(path, append(data, '\n'))
}
