package node_test

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/spinehq/spine/internal/config"
	"github.com/spinehq/spine/internal/pgtest"
	"github.com/spinehq/spine/internal/spinetest"
	"github.com/spinehq/spine/node"
)

// The embedded client port refuses a client without the token that serve
// keeps in the data dir (0600, never logged); spine's own in-process
// connection and a client with the token get in.
func TestNATSPortRefusesAnonymous(t *testing.T) {
	_, url := pgtest.New(t)
	var logs spinetest.Buffer
	cfg := config.Config{DatabaseURL: url, NATSListen: "127.0.0.1:0", HTTPAddr: "127.0.0.1:0", DataDir: t.TempDir(),
		TokenSecret: secret, Replicas: 1}
	n, err := node.Start(context.Background(), cfg, slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer n.Stop()
	if _, err := n.NC.RTT(); err != nil {
		t.Fatalf("in-process connection: %v", err)
	}
	nc, err := nats.Connect(n.NATSURL(), nats.MaxReconnects(0))
	if err == nil {
		nc.Close()
		t.Fatal("an anonymous client was let in on the NATS port")
	}
	if !errors.Is(err, nats.ErrAuthorization) {
		t.Fatalf("anonymous client: %v, want an authorization violation", err)
	}
	st, err := os.Stat(cfg.NATSTokenPath())
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("token file %s: %v %v", cfg.NATSTokenPath(), st, err)
	}
	token, _ := os.ReadFile(cfg.NATSTokenPath())
	opts, err := node.NATSAuth(cfg, n.NATSURL())
	if err != nil || len(opts) != 1 {
		t.Fatalf("NATSAuth for the embedded server = %d options, %v", len(opts), err)
	}
	if nc, err = nats.Connect(n.NATSURL(), opts...); err != nil {
		t.Fatalf("client with the data dir's token: %v", err)
	}
	nc.Close()
	if strings.Contains(logs.String(), strings.TrimSpace(string(token))) {
		t.Fatal("the NATS token is in the log")
	}
}

// sentToken is the token a client given opts presents; "" when none.
func sentToken(t *testing.T, opts []nats.Option) string {
	t.Helper()
	o := nats.GetDefaultOptions()
	for _, opt := range opts {
		if err := opt(&o); err != nil {
			t.Fatal(err)
		}
	}
	return o.Token
}

// Credentials go where they belong: the data dir's token only to a server
// on this machine, SPINE_NATS_TOKEN to any, nothing over a URL's own.
func TestNATSAuthChoosesCredentials(t *testing.T) {
	cfg := config.Config{DataDir: t.TempDir()}
	file, env := strings.Repeat("ab", 32), strings.Repeat("c", 64)
	if err := os.WriteFile(cfg.NATSTokenPath(), []byte(file+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		url, env, want string
	}{
		{"nats://127.0.0.1:4223", "", file},
		{"localhost:4223", "", file},
		{"nats://[::1]:4223,nats://127.0.0.1:4224", "", file},
		{"nats://nats.example.com:4222", "", ""},
		{"nats://127.0.0.1:4223,nats://10.0.0.2:4222", "", ""},
		{"nats://nats.example.com:4222", env, env},
		{"nats://127.0.0.1:4223", env, env},
		{"nats://user:pass@127.0.0.1:4223", env, ""},
	} {
		cfg.NATSToken = c.env
		opts, err := node.NATSAuth(cfg, c.url)
		if err != nil {
			t.Fatalf("%s: %v", c.url, err)
		}
		if got := sentToken(t, opts); got != c.want {
			t.Errorf("%s with SPINE_NATS_TOKEN %q sends token %q, want %q", c.url, c.env, got, c.want)
		}
	}
	if got := node.RedactNATSURL("nats://u:p@a:1,b:2,tok@c:3"); got != "nats://REDACTED@a:1,b:2,REDACTED@c:3" {
		t.Errorf("redacted = %s", got)
	}
}
