package compose_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/spinehq/spine/internal/config"
	"github.com/spinehq/spine/node"
)

// The compose NATS's client port is published on the machine, so it takes
// only clients with SPINE_NATS_TOKEN: nats-server reads deploy/nats.conf,
// which takes the token from its environment, and spine is given the same.

const (
	natsConfFile   = "deploy/nats.conf"
	natsConfTarget = "/etc/nats/spine.conf"
	// natsTokenRef is how compose must pass the token: required, no default
	// (a default in the file would be a token anyone who read it has).
	natsTokenRef = "${" + config.EnvNATSToken + ":?"
)

func checkNATSAuth(services map[string]service, files map[string]string) []string {
	var problems []string
	nats, spine := services["nats"], services["spine"]
	problems = append(problems, checkNATSNode("nats", nats)...)
	if got := spine.Env[config.EnvNATSToken]; got != nats.Env[config.EnvNATSToken] {
		problems = append(problems, fmt.Sprintf("spine's %s is %q, the nats service's %q", config.EnvNATSToken, got,
			nats.Env[config.EnvNATSToken]))
	}
	if strings.Contains(spine.Env[config.EnvNATSURL], "@") {
		problems = append(problems, config.EnvNATSURL+" carries credentials: they would be sent instead of the token")
	}
	if tok, err := requiredToken(files[natsConfFile], strings.Repeat("9f", 32)); err != nil || tok != strings.Repeat("9f", 32) {
		problems = append(problems, fmt.Sprintf("%s does not require $%s of clients (token %q, %v)", natsConfFile,
			config.EnvNATSToken, tok, err))
	}
	return problems
}

// checkNATSNode: a nats service reads deploy/nats.conf and is given a
// required SPINE_NATS_TOKEN.
func checkNATSNode(svc string, s service) []string {
	var problems []string
	if conf := flagValue(s.Command, "-c", flagValue(s.Command, "--config", "")); conf == "" || mountedFrom(s, conf) != natsConfFile {
		problems = append(problems, fmt.Sprintf("%s does not read %s (-c %q)", svc, natsConfFile, conf))
	}
	if !strings.HasPrefix(s.Env[config.EnvNATSToken], natsTokenRef) {
		problems = append(problems, fmt.Sprintf("%s: %s is %q, want a required %s…}", svc, config.EnvNATSToken,
			s.Env[config.EnvNATSToken], natsTokenRef))
	}
	return problems
}

// requiredToken is the client token nats-server requires with conf as its
// config file and token as SPINE_NATS_TOKEN in its environment.
func requiredToken(conf, token string) (string, error) {
	dir, err := os.MkdirTemp("", "natsconf")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "nats.conf")
	if err := os.WriteFile(path, []byte(conf), 0o600); err != nil {
		return "", err
	}
	old, had := os.LookupEnv(config.EnvNATSToken)
	os.Setenv(config.EnvNATSToken, token)
	defer func() {
		if had {
			os.Setenv(config.EnvNATSToken, old)
		} else {
			os.Unsetenv(config.EnvNATSToken)
		}
	}()
	opts, err := server.ProcessConfigFile(path)
	if err != nil {
		return "", err
	}
	return opts.Authorization, nil
}

// A server started from deploy/nats.conf refuses an anonymous client and
// lets in spine's client given SPINE_NATS_TOKEN, as compose passes it.
func TestComposeNATSTakesOnlyItsToken(t *testing.T) {
	token := strings.Repeat("4d", 32)
	t.Setenv(config.EnvNATSToken, token)
	opts, err := server.ProcessConfigFile(repoPath(natsConfFile))
	if err != nil {
		t.Fatal(err)
	}
	opts.Host, opts.Port, opts.NoLog, opts.NoSigs = "127.0.0.1", -1, true, true
	opts.JetStream, opts.StoreDir = true, t.TempDir()
	srv, err := server.NewServer(opts)
	if err != nil {
		t.Fatal(err)
	}
	go srv.Start()
	defer srv.Shutdown()
	if !srv.ReadyForConnections(10e9) {
		t.Fatal("nats-server did not start")
	}
	if nc, err := nats.Connect(srv.ClientURL(), nats.MaxReconnects(0)); !errors.Is(err, nats.ErrAuthorization) {
		if nc != nil {
			nc.Close()
		}
		t.Fatalf("anonymous client = %v, want an authorization violation", err)
	}
	auth, err := node.NATSAuth(config.Config{NATSToken: token, DataDir: t.TempDir()}, srv.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	nc, err := nats.Connect(srv.ClientURL(), append(auth, nats.MaxReconnects(0))...)
	if err != nil {
		t.Fatalf("spine's client with %s: %v", config.EnvNATSToken, err)
	}
	nc.Close()
}
