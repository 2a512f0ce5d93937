package bench

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"path/filepath"
	"strings"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/spinehq/spine/streams"
)

// clusterSize is the number of nats-servers of --cluster; its streams are
// at this many replicas.
const clusterSize = 3

// clusterReadyTimeout bounds the wait for a server to accept connections
// and for the JetStream meta group to elect a leader.
const clusterReadyTimeout = 30 * time.Second

// natsCluster is three in-process nats-servers with JetStream, routed to
// one another on loopback: the three-node shape of a deployment, in one
// process.
type natsCluster struct {
	servers []*server.Server
	urls    []string
}

// startCluster starts the servers, with their stores under dir, and waits
// until JetStream has a meta leader. On error, whatever started is stopped.
func startCluster(ctx context.Context, dir string) (c *natsCluster, err error) {
	c = &natsCluster{}
	defer func() {
		if err != nil {
			c.stop()
		}
	}()
	routes, err := freeAddrs(clusterSize)
	if err != nil {
		return nil, err
	}
	routeURLs := make([]*url.URL, len(routes))
	for i, r := range routes {
		routeURLs[i] = &url.URL{Scheme: "nats", Host: r.String()}
	}
	for i, r := range routes {
		opts := &server.Options{ServerName: fmt.Sprintf("bench-n%d", i+1), Host: "127.0.0.1", Port: server.RANDOM_PORT,
			JetStream: true, StoreDir: filepath.Join(dir, fmt.Sprintf("nats-n%d", i+1)), NoSigs: true, NoLog: true,
			MaxPayload: streams.MaxEnvelopeBytes + 64<<10,
			Cluster:    server.ClusterOpts{Name: "spine-bench", Host: r.IP.String(), Port: r.Port}, Routes: routeURLs}
		s, err := server.NewServer(opts)
		if err != nil {
			return nil, fmt.Errorf("nats cluster: server %d: %w", i+1, err)
		}
		go s.Start()
		c.servers = append(c.servers, s)
		if !s.ReadyForConnections(clusterReadyTimeout) {
			return nil, fmt.Errorf("nats cluster: server %d not ready after %s", i+1, clusterReadyTimeout)
		}
		c.urls = append(c.urls, s.ClientURL())
	}
	return c, c.waitMeta(ctx)
}

// freeAddrs finds n free loopback ports for the routes. Another process may
// take one before the server binds it; the run then fails at start.
func freeAddrs(n int) ([]*net.TCPAddr, error) {
	out := make([]*net.TCPAddr, 0, n)
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("nats cluster: free port: %w", err)
		}
		out = append(out, ln.Addr().(*net.TCPAddr))
		defer ln.Close() // held until all n are chosen, so they differ
	}
	return out, nil
}

// waitMeta polls until JetStream answers account info, which it does once
// the meta group has a leader. The cluster elects on its own clock, so this
// polls.
func (c *natsCluster) waitMeta(ctx context.Context) error {
	nc, err := nats.Connect(c.url())
	if err != nil {
		return fmt.Errorf("nats cluster: %w", err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return fmt.Errorf("nats cluster: %w", err)
	}
	deadline := time.Now().Add(clusterReadyTimeout)
	for {
		actx, cancel := context.WithTimeout(ctx, time.Second)
		_, err := js.AccountInfo(actx)
		cancel()
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("nats cluster: no JetStream meta leader after %s: %w", clusterReadyTimeout, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// url lists every server, for a client that may use any of them.
func (c *natsCluster) url() string { return strings.Join(c.urls, ",") }

// serverURL is the i-th instance's server: instances are spread over the
// servers in turn, each connected to one.
func (c *natsCluster) serverURL(i int) string { return c.urls[i%len(c.urls)] }

// stop shuts every server down and waits for each.
func (c *natsCluster) stop() {
	if c == nil {
		return
	}
	for _, s := range c.servers {
		s.Shutdown()
	}
	for _, s := range c.servers {
		s.WaitForShutdown()
	}
	c.servers = nil
}
