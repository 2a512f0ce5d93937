package faults_test

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/spinehq/spine/internal/config"
	"github.com/spinehq/spine/internal/pgtest"
	"github.com/spinehq/spine/internal/spinetest"
	"github.com/spinehq/spine/node"
	"github.com/spinehq/spine/streams"
)

// buildSpine builds the binary once per test.
func buildSpine(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "spine")
	out, err := exec.Command("go", "build", "-o", bin, "github.com/spinehq/spine/cmd/spine").CombinedOutput()
	if err != nil {
		t.Fatalf("build spine: %v\n%s", err, out)
	}
	return bin
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// serve starts `spine serve` and waits until it says it is serving.
func serve(t *testing.T, bin string, env []string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(bin, "serve")
	cmd.Env = append(os.Environ(), env...)
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ready := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		said := false
		for sc.Scan() {
			if !said && strings.Contains(sc.Text(), "spine is serving") {
				said = true
				ready <- true
			}
		}
		if !said {
			ready <- false
		}
	}()
	select {
	case ok := <-ready:
		if !ok {
			cmd.Wait()
			t.Fatal("spine exited before serving")
		}
	case <-time.After(spinetest.WaitTimeout):
		cmd.Process.Kill()
		t.Fatal("spine did not start")
	}
	return cmd
}

// natsToken is the embedded server's client token (SPINE_NATS_TOKEN).
var natsToken = strings.Repeat("4e", 32)

// SIGKILL at random points of a long ingest, many times: every
// acknowledged publish is projected exactly once, and the final
// projections equal an uninterrupted replay of the same log.
func TestSIGKILLDuringIngest(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: skips the SIGKILL loop")
	}
	bin := buildSpine(t)
	_, dbURL := pgtest.New(t)
	dataDir := t.TempDir()
	natsAddr := freeAddr(t)
	env := []string{config.EnvDatabaseURL + "=" + dbURL, config.EnvDataDir + "=" + dataDir,
		config.EnvNATSListen + "=" + natsAddr, config.EnvHTTPAddr + "=" + freeAddr(t),
		config.EnvTokenSecret + "=" + strings.Repeat("cd", 32), config.EnvNATSURL + "=",
		config.EnvNATSToken + "=" + natsToken}

	rng := rand.New(rand.NewPCG(42, 7))
	acked := map[string]int64{} // session → last acknowledged seq
	kills := 0
	for round := 0; round < 8; round++ {
		cmd := serve(t, bin, env)
		publishFor(t, natsAddr, acked, round, time.Duration(100+rng.IntN(400))*time.Millisecond)
		cmd.Process.Signal(syscall.SIGKILL)
		cmd.Wait()
		kills++
	}
	// A last, clean run projects whatever the kills left behind.
	cmd := serve(t, bin, env)
	defer func() { cmd.Process.Signal(syscall.SIGTERM); cmd.Wait() }()

	cfg := config.Config{DatabaseURL: dbURL, NATSURL: "nats://" + natsAddr, NATSToken: natsToken, DataDir: dataDir, NATSListen: "off"}
	waitProjected(t, cfg, acked)
	res, err := node.Rebuild(context.Background(), cfg, spinetest.Logger(t), node.RebuildOptions{Verify: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, tbl := range res.Differ {
		t.Errorf("%s: after %d kills %s, uninterrupted replay %s", tbl, kills, res.Live[tbl], res.Rebuilt[tbl])
	}
	t.Logf("%d SIGKILLs, %d sessions; projections equal an uninterrupted replay", kills, len(acked))
}

// publishFor publishes chunks of a few sessions for d, waiting for each
// ack, and records what was acknowledged.
func publishFor(t *testing.T, addr string, acked map[string]int64, round int, d time.Duration) {
	t.Helper()
	nc, err := nats.Connect("nats://"+addr, nats.Token(natsToken), nats.MaxReconnects(0))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	pub := streams.NewPublisher(js)
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	sessions := []string{fmt.Sprintf("k%d-a", round), fmt.Sprintf("k%d-b", round), "long-lived"}
	for i := 0; ctx.Err() == nil; i++ {
		id := sessions[i%len(sessions)]
		var e *streams.Envelope
		seq, started := acked[id]
		switch {
		case !started:
			e = spinetest.Start(id)
		case i%17 == 0:
			e = spinetest.Command(id, seq+1, "go test")
		default:
			e = spinetest.Text(id, seq+1, fmt.Sprintf("%s chunk %d\n", id, seq+1))
		}
		if _, err := pub.Publish(ctx, e, nil); err != nil {
			return // the deadline, or the kill: what was acked is recorded
		}
		if started {
			acked[id] = seq + 1
		} else {
			acked[id] = 0
		}
	}
}

// waitProjected waits until every acknowledged chunk is in the projections.
func waitProjected(t *testing.T, cfg config.Config, acked map[string]int64) {
	t.Helper()
	pool, err := pgxConnect(cfg.DatabaseURL)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close(context.Background())
	deadline := time.Now().Add(spinetest.WaitTimeout)
	for {
		bad := ""
		for id, last := range acked {
			var got int64
			pool.QueryRow(context.Background(), `SELECT last_seq FROM sessions WHERE id = $1`, id).Scan(&got)
			// >=: a publish stored just before a kill may never have been acknowledged.
			if got < last {
				bad = fmt.Sprintf("session %s at seq %d, %d acknowledged", id, got, last)
				break
			}
		}
		if bad == "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal(bad)
		}
		time.Sleep(50 * time.Millisecond) // another process projects: there is no signal to wait on
	}
	var dropped int
	pool.QueryRow(context.Background(), `SELECT coalesce(sum(dropped_actions), 0) FROM sessions`).Scan(&dropped)
	if dropped != 0 {
		t.Fatalf("%d chunks recorded as holes: an acknowledged publish was lost", dropped)
	}
}
