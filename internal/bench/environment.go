package bench

import (
	"bufio"
	"cmp"
	"context"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/spinehq/spine/streams"
)

func environment() Environment {
	return Environment{GoVersion: runtime.Version(), GOOS: runtime.GOOS, GOARCH: runtime.GOARCH,
		GOMAXPROCS: runtime.GOMAXPROCS(0), NumCPU: runtime.NumCPU()}
}

func parameters(cfg Config) Parameters {
	return Parameters{Sessions: cfg.Sessions, Chunks: cfg.Chunks, Payload: cfg.Payload, Rate: cfg.Rate,
		LatencySeconds: cfg.LatencyDuration.Seconds(), Batch: cfg.Batch, Events: cfg.Events,
		Instances: cfg.Instances, Cluster: cfg.Cluster, Duration: cfg.Duration.Seconds(),
		DuplicateWindow: cmp.Or(cfg.DuplicateWindow, streams.DuplicateWindow).Seconds()}
}

// postgres describes the server: its version and the two settings that
// decide what a commit costs.
func postgres(ctx context.Context, pool *pgxpool.Pool, source string) (Postgres, error) {
	p := Postgres{Source: source}
	err := pool.QueryRow(ctx, `SELECT current_setting('server_version'), current_setting('fsync'),
		current_setting('synchronous_commit')`).Scan(&p.Version, &p.Fsync, &p.SynchronousCommit)
	if err != nil {
		return p, fmt.Errorf("postgres settings: %w", err)
	}
	return p, nil
}

// memory reads the resident set from /proc/self/status; elsewhere than
// Linux it reports zeros.
func memory() Memory { return memoryOf("self") }

// memoryOf is memory for another process ("self" for this one).
func memoryOf(pid string) Memory {
	f, err := os.Open("/proc/" + pid + "/status")
	if err != nil {
		return Memory{}
	}
	defer f.Close()
	var m Memory
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		key, value, _ := strings.Cut(sc.Text(), ":")
		switch key {
		case "VmRSS":
			m.RSSBytes = kilobytes(value)
		case "VmHWM":
			m.PeakRSSBytes = kilobytes(value)
		}
	}
	return m
}

// kilobytes parses "  123456 kB" into bytes.
func kilobytes(s string) int64 {
	n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(s), " kB"), 10, 64)
	return n * 1024
}
