package main

import (
	"bufio"
	"context"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/spinehq/spine/auth"
	"github.com/spinehq/spine/internal/config"
	"github.com/spinehq/spine/internal/pgtest"
)

// A mint that finds no secret says where it looked and what to do, and
// creates nothing: a secret made on the spot signs tokens no server knows.
func TestTokenMintNeedsASecret(t *testing.T) {
	dataDir := filepath.Join(t.TempDir(), "data")
	t.Setenv(config.EnvTokenSecret, "")
	t.Setenv(config.EnvDataDir, dataDir)
	out, err := capture(t, "token", "mint")
	path := filepath.Join(dataDir, "token.secret")
	if err == nil || out != "" {
		t.Fatalf("mint without a secret = %v, printed %q", err, out)
	}
	for _, want := range []string{config.EnvTokenSecret + " is not set", path + " does not exist", "spine token init"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	if _, err := os.Stat(dataDir); !os.IsNotExist(err) {
		t.Fatalf("mint created %s (%v)", dataDir, err)
	}
}

// token init makes the secret serve would, once; mint signs with it and
// carries the role it is given.
func TestTokenInitThenMint(t *testing.T) {
	dataDir := filepath.Join(t.TempDir(), "data")
	t.Setenv(config.EnvTokenSecret, "")
	t.Setenv(config.EnvDataDir, dataDir)
	path := filepath.Join(dataDir, "token.secret")
	if out, err := capture(t, "token", "init"); err != nil || !strings.Contains(out, "created token secret "+path) {
		t.Fatalf("token init = %v %q", err, out)
	}
	st, err := os.Stat(path)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("secret file: %v %v", st, err)
	}
	before, _ := os.ReadFile(path)
	if out, err := capture(t, "token", "init"); err != nil || !strings.Contains(out, "exists") {
		t.Fatalf("second token init = %v %q", err, out)
	}
	if after, _ := os.ReadFile(path); string(after) != string(before) {
		t.Fatal("a second token init replaced the secret")
	}
	secret, _ := auth.LoadSecret(path)
	signer, _ := auth.NewSigner(secret)
	for role, admin := range map[string]bool{"admin": true, "member": false} {
		out, err := capture(t, "token", "mint", "--org", "acme", "--member", "ada", "--role", role)
		if err != nil {
			t.Fatal(err)
		}
		c, err := signer.Verify(strings.TrimSpace(out), auth.AudienceMember, time.Now())
		if err != nil || c.IsAdmin() != admin || c.Org != "acme" || c.Member != "ada" {
			t.Fatalf("--role %s: %+v %v", role, c, err)
		}
	}
	if _, err := capture(t, "token", "mint", "--role", "root"); exitCode(err) != 2 {
		t.Fatalf("--role root = %v, want a usage error", err)
	}
	mintIngestAndBilling(t, signer)
}

// --ingest mints an admin's ingest token (never a member's), --billing puts
// its claim on any token.
func mintIngestAndBilling(t *testing.T, signer *auth.Signer) {
	out, err := capture(t, "token", "mint", "--org", "acme", "--member", "ada", "--ingest", "--billing", "subscription")
	if err != nil {
		t.Fatal(err)
	}
	c, err := signer.Verify(strings.TrimSpace(out), auth.AudienceIngest, time.Now())
	if err != nil || !c.IsAdmin() || c.Billing != auth.BillingSubscription || c.Org != "acme" {
		t.Fatalf("--ingest --billing subscription: %+v %v", c, err)
	}
	if _, err := signer.Verify(strings.TrimSpace(out), auth.AudienceMember, time.Now()); err == nil {
		t.Fatal("an ingest token opens the member routes")
	}
	out, err = capture(t, "token", "mint", "--org", "acme", "--member", "ada", "--billing", "metered")
	if c, err2 := signer.Verify(strings.TrimSpace(out), auth.AudienceMember, time.Now()); err != nil || err2 != nil || c.Billing != auth.BillingMetered {
		t.Fatalf("--billing metered: %+v %v %v", c, err, err2)
	}
	for _, args := range [][]string{{"--ingest", "--role", "member"}, {"--billing", "free"}} {
		if _, err := capture(t, append([]string{"token", "mint"}, args...)...); exitCode(err) != 2 {
			t.Fatalf("token mint %v = %v, want a usage error", args, err)
		}
	}
}

// jwtRE matches a compact JWS, as every token spine mints is.
var jwtRE = regexp.MustCompile(`eyJ[\w-]+\.[\w-]+\.[\w-]+`)

// serveTo runs spine serve with its stderr on w, on a fresh database and
// data dir, until its banner's last line; then stops it and returns what
// it wrote (read from r) and the data dir. w is closed once serve returns,
// so a serve that fails before its banner ends the read, not the test run.
func serveTo(t *testing.T, r io.Reader, w *os.File) (string, string) {
	t.Helper()
	_, dbURL := pgtest.New(t)
	dataDir := t.TempDir()
	for k, v := range map[string]string{config.EnvDatabaseURL: dbURL, config.EnvDataDir: dataDir, config.EnvNATSURL: "",
		config.EnvNATSListen: "off", config.EnvHTTPAddr: "127.0.0.1:0", config.EnvTokenSecret: ""} {
		t.Setenv(k, v)
	}
	old := os.Stderr
	os.Stderr = w
	defer func() { os.Stderr = old }()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		err := runServe(ctx, nil)
		w.Close()
		done <- err
	}()
	var out strings.Builder
	sc := bufio.NewScanner(r)
	for sc.Scan() { // until the banner's last words, whichever it prints
		line := strings.TrimRight(sc.Text(), "\r") // a terminal ends lines with \r\n
		out.WriteString(line + "\n")
		if strings.Contains(line, "spine token mint") || strings.Contains(line, "export SPINE_TOKEN=") {
			break
		}
	}
	cancel()
	go func() { _, _ = io.Copy(io.Discard, r) }() // the shutdown's log must not block on a full pipe
	if err := <-done; err != nil {
		t.Fatalf("serve: %v\n%s", err, out.String())
	}
	return out.String(), dataDir
}

// serve's output going anywhere but a terminal (a pipe here, a log file in
// production) holds no token, only the command that mints one.
func TestServePrintsNoTokenOffTerminal(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	out, dataDir := serveTo(t, r, w)
	want := config.EnvDataDir + "=" + dataDir + " spine token mint --org dev --member dev"
	if !strings.Contains(out, want) || jwtRE.MatchString(out) || strings.Contains(out, "export SPINE_TOKEN") {
		t.Fatalf("serve's output off a terminal must hold %q and no token:\n%s", want, out)
	}
}
