package main

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/spinehq/spine/importer"
	"github.com/spinehq/spine/internal/config"
	"github.com/spinehq/spine/internal/pgtest"
	"github.com/spinehq/spine/internal/spinetest"
	"github.com/spinehq/spine/node"
)

// spine publish --nats and spine import --nats reach the embedded server's
// client port with the token of the data dir they are pointed at, or with
// SPINE_NATS_TOKEN; without either they are refused and told where the
// token is.
func TestNATSProducersPresentTheToken(t *testing.T) {
	_, url := pgtest.New(t)
	dataDir := t.TempDir()
	n, err := node.Start(context.Background(), config.Config{DatabaseURL: url, NATSListen: "127.0.0.1:0",
		HTTPAddr: "127.0.0.1:0", DataDir: dataDir, TokenSecret: strings.Repeat("ab", 32)}, spinetest.Logger(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(n.Stop)
	tok, _ := n.DevToken()
	t.Setenv(config.EnvURL, "http://"+n.HTTPAddr())
	t.Setenv(config.EnvToken, tok)
	t.Setenv(config.EnvNATSToken, "")

	t.Setenv(config.EnvDataDir, t.TempDir()) // not serve's: it holds no token
	_, err = capture(t, "publish", "--nats", n.NATSURL(), "../../testdata/quickstart/live.jsonl")
	if err == nil || !strings.Contains(err.Error(), "nats.token") || !strings.Contains(err.Error(), config.EnvNATSToken) {
		t.Fatalf("publish without the token = %v, want a refusal that names nats.token and %s", err, config.EnvNATSToken)
	}

	t.Setenv(config.EnvDataDir, dataDir)
	out, err := capture(t, "publish", "--nats", n.NATSURL(), "../../testdata/quickstart/live.jsonl")
	if err != nil || !strings.Contains(out, "6 sent, 6 accepted, 0 refused") {
		t.Fatalf("publish --nats with serve's data dir: %v\n%s", err, out)
	}
	out, err = capture(t, "import", "--json", "--nats", n.NATSURL(), "../../importer/testdata/split")
	var sum importer.Summary
	if err != nil || json.Unmarshal([]byte(out), &sum) != nil || sum.Sessions == 0 || len(sum.Refused) != 0 {
		t.Fatalf("import --nats: %v\n%s", err, out)
	}

	t.Setenv(config.EnvDataDir, t.TempDir())
	t.Setenv(config.EnvNATSToken, readToken(t, dataDir))
	if out, err := capture(t, "publish", "--nats", n.NATSURL(), "../../testdata/quickstart/end.jsonl"); err != nil {
		t.Fatalf("publish --nats with %s: %v\n%s", config.EnvNATSToken, err, out)
	}
	ctx, cancel := context.WithTimeout(context.Background(), spinetest.WaitTimeout)
	defer cancel()
	if err := n.WaitIdle(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if out, err := capture(t, "read", "session", "qs-1"); err != nil || !strings.Contains(out, "done") {
		t.Fatalf("the session published over NATS: %v\n%s", err, out)
	}
}

func readToken(t *testing.T, dataDir string) string {
	t.Helper()
	cfg := config.Config{DataDir: dataDir}
	b, err := os.ReadFile(cfg.NATSTokenPath())
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}
