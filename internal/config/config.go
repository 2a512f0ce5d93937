// Package config reads spine's settings from the environment. Every setting
// has a default that makes `spine serve` work with no configuration at all.
package config

import (
	"cmp"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Environment variable names. docker-compose.yaml and the README use exactly
// these; a test checks that they agree.
const (
	EnvDatabaseURL   = "SPINE_DATABASE_URL" // PostgreSQL URL; empty = discover (see pgboot)
	EnvNATSURL       = "SPINE_NATS_URL"     // external NATS; empty = embedded server
	EnvNATSListen    = "SPINE_NATS_LISTEN"  // embedded NATS client listener; "off" = in-process only
	EnvNATSToken     = "SPINE_NATS_TOKEN"   // NATS client token; empty = generated under the data dir for the embedded server
	EnvHTTPAddr      = "SPINE_HTTP_ADDR"    // HTTP listen address
	EnvDataDir       = "SPINE_DATA_DIR"     // embedded NATS store, private PostgreSQL, dev secret
	EnvTokenSecret   = "SPINE_TOKEN_SECRET" // HMAC secret for bearer tokens; empty = generated under the data dir
	EnvReplicas      = "SPINE_STREAM_REPLICAS"
	EnvURL           = "SPINE_URL"                  // where CLI commands reach a running spine
	EnvToken         = "SPINE_TOKEN"                // bearer token CLI commands send
	EnvSpoolDir      = "SPINE_SPOOL_DIR"            // spine run's spool; empty = spine/spool in the user's config dir
	EnvPublicURL     = "SPINE_PUBLIC_URL"           // where people reach spine, for links in cards and pages
	EnvFileCap       = "SPINE_FILE_CAP"             // largest event content stored inline, bytes
	EnvMaxUpload     = "SPINE_MAX_UPLOAD_BYTES"     // largest upload, bytes
	EnvPartitions    = "SPINE_PARTITIONS"           // recorder partitions (1 = none)
	EnvIdleTimeout   = "SPINE_SESSION_IDLE_TIMEOUT" // a running session silent this long ends timeout
	EnvCancelGrace   = "SPINE_CANCEL_GRACE"         // a cancelled session still running this long ends cancelled
	EnvTelemetryIdle = "SPINE_TELEMETRY_IDLE"       // a session the apps' telemetry made, silent this long, ends done
	// Request limits (docs/limits.md); "off" turns one off.
	EnvBodyMinRate        = "SPINE_HTTP_BODY_MIN_RATE"           // bytes/s a request body must average after the grace
	EnvBodyGrace          = "SPINE_HTTP_BODY_GRACE"              // time every body gets before the rate counts (Go duration)
	EnvInflightBytes      = "SPINE_HTTP_INFLIGHT_BYTES"          // weighted request bytes in flight, process-wide
	EnvOrgBytesPerSec     = "SPINE_ORG_INGEST_BYTES_PER_SEC"     // each org's ingest quota in bytes/s
	EnvOrgEnvelopesPerSec = "SPINE_ORG_INGEST_ENVELOPES_PER_SEC" // each org's ingest quota in envelopes/s
)

// Defaults.
const (
	DefaultHTTPAddr   = "127.0.0.1:7070"
	DefaultNATSListen = "127.0.0.1:4223"
	DefaultDataDir    = "./data"
	DefaultURL        = "http://127.0.0.1:7070"
)

// Vars lists every environment variable spine reads.
var Vars = []string{EnvDatabaseURL, EnvNATSURL, EnvNATSListen, EnvNATSToken, EnvHTTPAddr, EnvDataDir,
	EnvTokenSecret, EnvReplicas, EnvURL, EnvToken, EnvPublicURL, EnvFileCap, EnvMaxUpload, EnvPartitions,
	EnvBodyMinRate, EnvBodyGrace, EnvInflightBytes, EnvOrgBytesPerSec, EnvOrgEnvelopesPerSec,
	EnvIdleTimeout, EnvCancelGrace, EnvTelemetryIdle, EnvSpoolDir}

// Config is spine serve's configuration.
type Config struct {
	DatabaseURL string // empty: discover a PostgreSQL (pgboot)
	NATSURL     string // empty: run an embedded nats-server
	NATSListen  string // embedded server's client listener; "off" = none
	// NATSToken is the token NATS clients present. The embedded server
	// requires it (empty: read or create DataDir/nats.token); spine's own
	// clients send it to any NATS URL without credentials of its own.
	NATSToken   string
	HTTPAddr    string // defaults to DefaultHTTPAddr
	DataDir     string // defaults to DefaultDataDir
	TokenSecret string // empty: read or create DataDir/token.secret
	// PublicURL is where people reach spine, the prefix of links to session
	// pages (MCP cards, fallback text), without a trailing slash; empty: the
	// HTTP listener's address.
	PublicURL string
	Replicas  int // stream replicas; 0 means 1
	Drain     time.Duration
	// FileCap is the largest event content stored inline; 0 means
	// library.DefaultFileCap (1 MiB).
	FileCap int
	// MaxUploadBytes bounds one upload; 0 means 1 GiB.
	MaxUploadBytes int64
	// Partitions splits the recorder's work by session id among instances;
	// 0 or 1 means one recorder projector for all sessions.
	Partitions int
	// Limits on requests; in each, 0 means the default and a negative
	// value turns the limit off (the environment's "off").
	BodyMinRate        int64         // bytes/s; default 16 KiB/s
	BodyGrace          time.Duration // default 10 s
	InflightBytes      int64         // default 256 MiB
	OrgBytesPerSec     float64       // default 2 MiB/s
	OrgEnvelopesPerSec float64       // default 5000/s
	// IdleTimeout ends a running session that received no envelope for
	// that long (status timeout); 0 means recorder.DefaultIdleTimeout (2h).
	IdleTimeout time.Duration
	// CancelGrace ends a session still running that long after its cancel
	// (status cancelled); 0 means recorder.DefaultCancelGrace (60s).
	CancelGrace time.Duration
	// TelemetryIdle ends a running session the apps' telemetry created
	// that received no envelope for that long (status done); 0 means
	// recorder.DefaultTelemetryIdle (10 min).
	TelemetryIdle time.Duration
}

// TokenSecretPath is where spine keeps its token secret when
// SPINE_TOKEN_SECRET is not set.
func (c Config) TokenSecretPath() string { return filepath.Join(c.DataDir, "token.secret") }

// NATSTokenPath is where the embedded NATS server keeps its client token
// when SPINE_NATS_TOKEN is not set.
func (c Config) NATSTokenPath() string { return filepath.Join(c.DataDir, "nats.token") }

// FromEnv reads the configuration from the environment.
func FromEnv() (Config, error) {
	c := Config{
		DatabaseURL: DatabaseURL(),
		NATSURL:     os.Getenv(EnvNATSURL),
		NATSListen:  cmp.Or(os.Getenv(EnvNATSListen), DefaultNATSListen),
		NATSToken:   os.Getenv(EnvNATSToken),
		HTTPAddr:    cmp.Or(os.Getenv(EnvHTTPAddr), DefaultHTTPAddr),
		DataDir:     cmp.Or(os.Getenv(EnvDataDir), DefaultDataDir),
		TokenSecret: os.Getenv(EnvTokenSecret),
		PublicURL:   strings.TrimRight(os.Getenv(EnvPublicURL), "/"),
		Replicas:    1,
		Drain:       30 * time.Second,
	}
	if r := os.Getenv(EnvReplicas); r != "" {
		if _, err := fmt.Sscanf(r, "%d", &c.Replicas); err != nil || c.Replicas < 1 || c.Replicas > 5 {
			return c, fmt.Errorf("%s=%q: want 1..5", EnvReplicas, r)
		}
	}
	if v := os.Getenv(EnvFileCap); v != "" {
		if _, err := fmt.Sscanf(v, "%d", &c.FileCap); err != nil || c.FileCap < 1 || c.FileCap > 3<<20 {
			return c, fmt.Errorf("%s=%q: want 1..3145728 bytes (event content travels in envelopes of at most 4 MiB)", EnvFileCap, v)
		}
	}
	if v := os.Getenv(EnvMaxUpload); v != "" {
		if _, err := fmt.Sscanf(v, "%d", &c.MaxUploadBytes); err != nil || c.MaxUploadBytes < 1 {
			return c, fmt.Errorf("%s=%q: want a positive number of bytes", EnvMaxUpload, v)
		}
	}
	if v := os.Getenv(EnvPartitions); v != "" {
		if _, err := fmt.Sscanf(v, "%d", &c.Partitions); err != nil || c.Partitions < 1 || c.Partitions > 64 {
			return c, fmt.Errorf("%s=%q: want 1..64", EnvPartitions, v)
		}
	}
	if err := c.readLimits(); err != nil {
		return c, err
	}
	if err := durations(&c); err != nil {
		return c, err
	}
	abs, err := filepath.Abs(c.DataDir)
	if err != nil {
		return c, fmt.Errorf("data dir %q: %w", c.DataDir, err)
	}
	c.DataDir = abs
	return c, nil
}

// DatabaseURL is SPINE_DATABASE_URL, the PostgreSQL spine uses (empty:
// discover one, see pgboot): what FromEnv puts in Config.DatabaseURL, for
// commands (spine bench) that need no other setting.
func DatabaseURL() string { return os.Getenv(EnvDatabaseURL) }

// CodexHome is where Codex keeps its sessions: its own $CODEX_HOME (a
// setting of Codex, not of spine, so not in Vars), else ~/.codex; "" when
// neither can be told.
func CodexHome() string {
	if d := os.Getenv("CODEX_HOME"); d != "" {
		return d
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return ""
	}
	return filepath.Join(home, ".codex")
}

// SpoolDir is SPINE_SPOOL_DIR, where spine run spools what spine has not
// taken yet (empty: spine/spool in the user's config directory).
func SpoolDir() string { return os.Getenv(EnvSpoolDir) }

// Dir is spine's directory in the user's config directory
// ($XDG_CONFIG_HOME or ~/.config on Linux, ~/Library/Application Support
// on macOS): the runner's login and config, levels.json, spine collect's
// state, the default spool.
func Dir() (string, error) {
	d, err := os.UserConfigDir()
	if err != nil {
		return "", fmt.Errorf("no config dir: %w", err)
	}
	return filepath.Join(d, "spine"), nil
}

// Remote is where a CLI command reaches a running spine and the token it
// sends there.
type Remote struct {
	URL   string // the --url flag, else SPINE_URL, else DefaultURL
	Token string // the --token flag, else SPINE_TOKEN; empty: none
}

// RemoteFromEnv is the Remote for a command's --url and --token flags
// (empty when not given): a flag wins over its environment variable.
func RemoteFromEnv(url, token string) Remote {
	return Remote{URL: cmp.Or(url, os.Getenv(EnvURL), DefaultURL), Token: cmp.Or(token, os.Getenv(EnvToken))}
}

// readLimits reads the request limits: a positive number, or "off".
func (c *Config) readLimits() error {
	for _, l := range []struct {
		env string
		dst *int64
	}{{EnvBodyMinRate, &c.BodyMinRate}, {EnvInflightBytes, &c.InflightBytes}} {
		v, err := limit(l.env)
		*l.dst = int64(v)
		if err != nil {
			return err
		}
	}
	var err error
	if c.OrgBytesPerSec, err = limit(EnvOrgBytesPerSec); err != nil {
		return err
	}
	if c.OrgEnvelopesPerSec, err = limit(EnvOrgEnvelopesPerSec); err != nil {
		return err
	}
	if v := os.Getenv(EnvBodyGrace); v != "" {
		if c.BodyGrace, err = time.ParseDuration(v); err != nil || c.BodyGrace <= 0 {
			return fmt.Errorf("%s=%q: want a positive duration such as 10s", EnvBodyGrace, v)
		}
	}
	return nil
}

// limit reads one limit: unset is 0 (the default), "off" is -1.
func limit(env string) (float64, error) {
	v := os.Getenv(env)
	if v == "" {
		return 0, nil
	}
	if v == "off" {
		return -1, nil
	}
	var n float64
	if _, err := fmt.Sscanf(v, "%g", &n); err != nil || n <= 0 {
		return 0, fmt.Errorf("%s=%q: want a positive number, or off", env, v)
	}
	return n, nil
}

// durations reads the session timeouts: Go durations ("2h", "90s"), from a
// second to a week.
func durations(c *Config) error {
	for env, d := range map[string]*time.Duration{EnvIdleTimeout: &c.IdleTimeout, EnvCancelGrace: &c.CancelGrace,
		EnvTelemetryIdle: &c.TelemetryIdle} {
		v := os.Getenv(env)
		if v == "" {
			continue
		}
		var err error
		if *d, err = time.ParseDuration(v); err != nil || *d < time.Second || *d > 7*24*time.Hour {
			return fmt.Errorf("%s=%q: want a duration from 1s to 168h, such as 2h or 90s", env, v)
		}
	}
	return nil
}
