package streams

import (
	"cmp"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
)

// EmbeddedConfig configures an in-process nats-server with JetStream.
type EmbeddedConfig struct {
	StoreDir string // JetStream store; required
	// Listen is the client listener ("127.0.0.1:4223"). Empty means no
	// listener: only in-process connections (tests, a single spine).
	Listen string
	// Token is what every client, in-process ones included, must present
	// (nats.Token, or nats://TOKEN@host:port). Empty means none, which is
	// refused with a Listen address (ErrListenWithoutToken).
	Token string
	// ServerName defaults to "spine-embedded".
	ServerName string
}

// Embedded is a running in-process nats-server.
type Embedded struct {
	srv   *server.Server
	token string
}

// StartEmbedded starts a nats-server in this process and waits until it is ready.
func StartEmbedded(cfg EmbeddedConfig) (*Embedded, error) {
	if cfg.Listen != "" && cfg.Token == "" {
		return nil, ErrListenWithoutToken
	}
	opts := &server.Options{
		ServerName: cmp.Or(cfg.ServerName, "spine-embedded"),
		JetStream:  true,
		StoreDir:   cfg.StoreDir,
		NoSigs:     true,
		NoLog:      true,
		DontListen: cfg.Listen == "",
		MaxPayload: MaxEnvelopeBytes + 64<<10,
		// Authorization is nats-server's single-token auth: nothing more
		// is needed while one spine is the only user of its server.
		Authorization: cfg.Token,
	}
	if cfg.Listen != "" {
		host, port, err := net.SplitHostPort(cfg.Listen)
		if err != nil {
			return nil, fmt.Errorf("embedded nats listen %q: %w", cfg.Listen, err)
		}
		opts.Host = host
		if opts.Port, err = strconv.Atoi(port); err != nil {
			return nil, fmt.Errorf("embedded nats listen %q: %w", cfg.Listen, err)
		}
		if opts.Port == 0 {
			opts.Port = server.RANDOM_PORT // nats-server reads 0 as its default port, 4222
		}
	}
	srv, err := server.NewServer(opts)
	if err != nil {
		return nil, fmt.Errorf("embedded nats: %w", err)
	}
	go srv.Start()
	if !srv.ReadyForConnections(10 * time.Second) {
		srv.Shutdown()
		return nil, fmt.Errorf("embedded nats: not ready after 10s (is %s in use?)", cfg.Listen)
	}
	return &Embedded{srv: srv, token: cfg.Token}, nil
}

// Connect opens an in-process client connection, with the token.
func (e *Embedded) Connect(opts ...nats.Option) (*nats.Conn, error) {
	opts = append([]nats.Option{nats.InProcessServer(e.srv), nats.Name("spine")}, opts...)
	if e.token != "" {
		opts = append(opts, nats.Token(e.token))
	}
	return nats.Connect("", opts...)
}

// ClientURL is where network clients reach the server ("" when not listening).
func (e *Embedded) ClientURL() string {
	if addr := e.srv.Addr(); addr != nil {
		return "nats://" + addr.String()
	}
	return ""
}

// Server exposes the underlying server (tests stop and restart it).
func (e *Embedded) Server() *server.Server { return e.srv }

// Stop shuts the server down and waits for it.
func (e *Embedded) Stop() {
	e.srv.Shutdown()
	e.srv.WaitForShutdown()
}
