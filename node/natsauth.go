package node

import (
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/url"
	"strings"

	"github.com/nats-io/nats.go"

	"github.com/spinehq/spine/auth"
	"github.com/spinehq/spine/internal/config"
)

// minNATSToken is the shortest SPINE_NATS_TOKEN the embedded server takes:
// as long as the one it would generate (32 random bytes, hex).
const minNATSToken = 2 * auth.MinSecretLen

// embeddedToken is the token the embedded server requires of every client:
// SPINE_NATS_TOKEN, else the data dir's nats.token, created (0600) on the
// first start, as the token secret is.
func embeddedToken(cfg config.Config) (string, error) {
	if cfg.NATSToken != "" {
		if len(cfg.NATSToken) < minNATSToken {
			return "", fmt.Errorf("%s: at least %d characters (the embedded server's client token)", config.EnvNATSToken, minNATSToken)
		}
		return cfg.NATSToken, nil
	}
	secret, err := auth.LoadOrCreateSecret(cfg.NATSTokenPath())
	if err != nil {
		return "", fmt.Errorf("nats client token: %w", err)
	}
	return hex.EncodeToString(secret), nil
}

// NATSAuth is what spine's own clients (spine publish --nats, spine import
// --nats, spine rebuild, a serve on SPINE_NATS_URL) present to the NATS at
// natsURL, a URL or a comma-separated list: nothing when the URL carries
// credentials of its own; else SPINE_NATS_TOKEN; else, when every server
// named is on this machine (a loopback address or localhost), the token of
// the embedded server whose data dir is cfg.DataDir, if it has one. A
// server elsewhere is sent nothing it was not given: its auth is its own.
func NATSAuth(cfg config.Config, natsURL string) ([]nats.Option, error) {
	local, creds := true, false
	for _, u := range strings.Split(natsURL, ",") {
		l, c, err := natsHost(strings.TrimSpace(u))
		if err != nil {
			return nil, err
		}
		local, creds = local && l, creds || c
	}
	switch {
	case creds:
		return nil, nil
	case cfg.NATSToken != "":
		return []nats.Option{nats.Token(cfg.NATSToken)}, nil
	case !local:
		return nil, nil
	}
	secret, err := auth.LoadSecret(cfg.NATSTokenPath())
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("nats client token: %w", err)
	}
	return []nats.Option{nats.Token(hex.EncodeToString(secret))}, nil
}

// natsHost reports whether a NATS URL names a server on this machine and
// whether it carries credentials. Like nats.go, it takes host:port alone.
func natsHost(raw string) (local, creds bool, err error) {
	if !strings.Contains(raw, "://") {
		raw = "nats://" + raw
	}
	u, err := url.Parse(raw)
	if err != nil {
		// url's message would repeat the URL, credentials and all.
		return false, false, errors.New("nats url does not parse")
	}
	host := u.Hostname()
	ip := net.ParseIP(host)
	return host == "localhost" || ip != nil && ip.IsLoopback(), u.User != nil, nil
}

// NATSAuthHint is what to do when a NATS server refused spine's client.
func NATSAuthHint(cfg config.Config) string {
	return fmt.Sprintf("the embedded server's client token is %s (set %s to serve's data dir) or %s; "+
		"another server takes credentials in the URL (nats://user:pass@host:port or nats://token@host:port)",
		cfg.NATSTokenPath(), config.EnvDataDir, config.EnvNATSToken)
}

// RedactNATSURL is natsURL fit for a message: each URL of the list without
// the credentials it may carry.
func RedactNATSURL(natsURL string) string {
	parts := strings.Split(natsURL, ",")
	for i, p := range parts {
		if at := strings.LastIndex(p, "@"); at >= 0 {
			scheme := ""
			if j := strings.Index(p, "://"); j >= 0 && j < at {
				scheme = p[:j+3]
			}
			parts[i] = scheme + "REDACTED@" + p[at+1:]
		}
	}
	return strings.Join(parts, ",")
}
