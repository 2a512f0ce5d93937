package faults_test

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/spinehq/spine/internal/config"
	"github.com/spinehq/spine/internal/pgtest"
	"github.com/spinehq/spine/internal/spinetest"
	"github.com/spinehq/spine/node"
	"github.com/spinehq/spine/streams"
)

// cluster is three in-process nats-servers with JetStream, routed on loopback.
type cluster struct {
	servers []*server.Server
	urls    []string
}

func startCluster(t *testing.T) *cluster {
	t.Helper()
	routes := []string{freeAddr(t), freeAddr(t), freeAddr(t)}
	var routeURLs []*url.URL
	for _, r := range routes {
		routeURLs = append(routeURLs, &url.URL{Scheme: "nats", Host: r})
	}
	c := &cluster{}
	for i := range 3 {
		host, port := splitPort(t, routes[i])
		opts := &server.Options{ServerName: fmt.Sprintf("n%d", i+1), Host: "127.0.0.1", Port: -1,
			JetStream: true, StoreDir: t.TempDir(), NoSigs: true, NoLog: true,
			Cluster: server.ClusterOpts{Name: "spine-test", Host: host, Port: port}, Routes: routeURLs}
		s, err := server.NewServer(opts)
		if err != nil {
			t.Fatal(err)
		}
		go s.Start()
		if !s.ReadyForConnections(10 * time.Second) {
			t.Fatalf("server n%d not ready", i+1)
		}
		c.servers = append(c.servers, s)
		c.urls = append(c.urls, s.ClientURL())
	}
	t.Cleanup(func() {
		for _, s := range c.servers {
			s.Shutdown()
			s.WaitForShutdown()
		}
	})
	c.waitMeta(t)
	return c
}

func splitPort(t *testing.T, addr string) (string, int) {
	t.Helper()
	i := strings.LastIndex(addr, ":")
	var port int
	fmt.Sscanf(addr[i+1:], "%d", &port)
	return addr[:i], port
}

// waitMeta waits until the JetStream meta group has a leader.
func (c *cluster) waitMeta(t *testing.T) {
	t.Helper()
	nc, err := nats.Connect(strings.Join(c.urls, ","))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	deadline := time.Now().Add(spinetest.WaitTimeout)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_, err := js.AccountInfo(ctx)
		cancel()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no JetStream meta leader: %v", err)
		}
		time.Sleep(100 * time.Millisecond) // the cluster elects on its own clock
	}
}

// A three-node NATS cluster with streams at R3 loses a node in the middle of
// a sustained ingest: every acknowledged publish is projected exactly once.
func TestClusterNodeLossDuringIngest(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: skips the three-node cluster")
	}
	c := startCluster(t)
	_, dbURL := pgtest.New(t)
	cfg := config.Config{DatabaseURL: dbURL, NATSURL: strings.Join(c.urls, ","), HTTPAddr: "127.0.0.1:0",
		DataDir: t.TempDir(), TokenSecret: strings.Repeat("ef", 32), Replicas: 3}
	n, err := node.Start(context.Background(), cfg, spinetest.Logger(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer n.Stop()
	si, err := n.JS.Stream(context.Background(), streams.StreamSessions)
	if err != nil {
		t.Fatal(err)
	}
	if info, _ := si.Info(context.Background()); info.Config.Replicas != 3 {
		t.Fatalf("stream replicas = %d, want 3", info.Config.Replicas)
	}

	// The producer connects to all three and keeps going through the loss.
	nc, err := nats.Connect(strings.Join(c.urls, ","), nats.MaxReconnects(-1), nats.ReconnectWait(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	pub := streams.NewPublisher(js)
	acked := map[string]int64{}
	var stopped string
	for i := 0; i < 1500; i++ {
		if i == 500 {
			// Stop a node that is neither the producer's nor the stream leader's, then keep going.
			victim := c.victim(t, nc, info(t, si).Cluster.Leader)
			stopped = victim.Name()
			victim.Shutdown()
		}
		id := fmt.Sprintf("c%d", i%5)
		seq, started := acked[id]
		e := spinetest.Text(id, seq+1, fmt.Sprintf("chunk %d\n", seq+1))
		if !started {
			e = spinetest.Start(id)
		}
		if !publishRetry(pub, e) {
			continue // never acknowledged: the next try reuses its seq and id
		}
		if started {
			acked[id] = seq + 1
		} else {
			acked[id] = 0
		}
	}
	if stopped == "" {
		t.Fatal("no node was stopped")
	}
	waitProjected(t, cfg, acked)
	var chunks int64
	pool, _ := pgxConnect(dbURL)
	defer pool.Close(context.Background())
	pool.QueryRow(context.Background(), `SELECT count(*) FROM session_chunks`).Scan(&chunks)
	var want int64
	for _, v := range acked {
		want += v
	}
	if chunks != want {
		t.Fatalf("%d chunks projected, %d acknowledged", chunks, want)
	}
	t.Logf("stopped %s after 500 publishes; %d chunks acknowledged and projected once each", stopped, want)
}

func info(t *testing.T, s jetstream.Stream) *jetstream.StreamInfo {
	t.Helper()
	i, err := s.Info(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return i
}

// victim picks a server other than the stream leader and the producer's.
func (c *cluster) victim(t *testing.T, nc *nats.Conn, leader string) *server.Server {
	t.Helper()
	for _, s := range c.servers {
		if s.Name() != leader && s.ClientURL() != nc.ConnectedUrl() {
			return s
		}
	}
	t.Fatal("no victim")
	return nil
}

// publishRetry publishes with retries for a few seconds (a node loss may
// fail a publish or two while routes settle).
func publishRetry(pub *streams.Publisher, e *streams.Envelope) bool {
	for range 50 {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		_, err := pub.Publish(ctx, e, nil)
		cancel()
		if err == nil {
			return true
		}
		time.Sleep(100 * time.Millisecond)
	}
	return false
}
