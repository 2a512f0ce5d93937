package node

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/spinehq/spine/internal/checksum"
	"github.com/spinehq/spine/internal/config"
	"github.com/spinehq/spine/internal/pgboot"
)

// RebuildOptions configure Rebuild.
type RebuildOptions struct {
	// Verify compares a checksum of every projection with the live one.
	Verify bool
	// Keep leaves the rebuilt database in place (its name is in the result);
	// otherwise it is dropped at the end.
	Keep bool
	// Progress, if set, is told how far each projector has got.
	Progress func(projector string, done, total uint64)
}

// RebuildResult says what a rebuild did.
type RebuildResult struct {
	Database string            `json:"database"`
	Kept     bool              `json:"kept"`
	Seconds  float64           `json:"seconds"`
	Verified bool              `json:"verified"`
	Live     map[string]string `json:"live,omitempty"`
	Rebuilt  map[string]string `json:"rebuilt,omitempty"`
	Differ   []string          `json:"differ"`
}

// rebuildPrefix names the rebuild's consumers beside the live ones.
const rebuildPrefix = "rebuild_"

// Rebuild replays the streams into a fresh database, with every projector
// spine runs, and (with Verify) compares the result with the live
// projections. The log is reached at cfg.NATSURL, else at the embedded
// server of a running `spine serve` (cfg.NATSListen), else by starting the
// embedded server on cfg.DataDir (spine must not be serving then).
func Rebuild(ctx context.Context, cfg config.Config, log *slog.Logger, ro RebuildOptions) (*RebuildResult, error) {
	start := time.Now()
	live, err := pgboot.Find(ctx, pgboot.Options{URL: cfg.DatabaseURL, DataDir: cfg.DataDir, Logger: log})
	if err != nil {
		return nil, err
	}
	defer live.Stop()
	name := "spine_rebuild_" + randomHex(4)
	rebuiltURL, err := createDatabase(ctx, live.URL, name)
	if err != nil {
		return nil, err
	}
	res := &RebuildResult{Database: name, Kept: ro.Keep, Differ: []string{}}
	if !ro.Keep {
		defer dropDatabase(context.WithoutCancel(ctx), live.URL, name, log)
	}
	rcfg := cfg
	rcfg.DatabaseURL, rcfg.NATSListen = rebuiltURL, "off"
	if rcfg.NATSURL, err = reachableNATS(cfg); err != nil {
		return nil, err
	}
	if err := replay(ctx, rcfg, log, ro); err != nil {
		return nil, err
	}
	if ro.Verify {
		if err := verify(ctx, live.URL, rebuiltURL, res); err != nil {
			return nil, err
		}
	}
	res.Seconds = time.Since(start).Seconds()
	return res, nil
}

// replay runs every projector into the rebuilt database until each has
// applied everything the log held, then removes the rebuild's consumers.
func replay(ctx context.Context, cfg config.Config, log *slog.Logger, ro RebuildOptions) error {
	// A prefix of its own: a consumer left by an earlier, interrupted
	// rebuild can never be mistaken for this one's.
	n, err := Start(ctx, cfg, log, &Options{NoHTTP: true, NoSweeper: true, ProjectorPrefix: rebuildPrefix + randomHex(3) + "_"})
	if err != nil {
		return err
	}
	defer n.Stop()
	defer n.deleteConsumers(context.WithoutCancel(ctx))
	return n.WaitIdle(ctx, ro.Progress)
}

// WaitIdle waits until every projector's consumer has nothing pending and
// nothing unacknowledged: everything the log held is committed.
func (n *Node) WaitIdle(ctx context.Context, progress func(string, uint64, uint64)) error {
	for _, p := range n.Projectors() {
		for {
			info, err := n.consumerInfo(ctx, p.Stream(), p.Name())
			if err != nil {
				return err
			}
			done := info.Delivered.Stream
			if progress != nil {
				progress(p.Name(), done, done+info.NumPending)
			}
			if info.NumPending == 0 && info.NumAckPending == 0 && p.Checkpoint() >= info.AckFloor.Stream {
				break
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(100 * time.Millisecond):
			}
		}
	}
	return nil
}

func (n *Node) consumerInfo(ctx context.Context, stream, name string) (*jetstream.ConsumerInfo, error) {
	c, err := n.JS.Consumer(ctx, stream, name)
	var info *jetstream.ConsumerInfo
	if err == nil {
		info, err = c.Info(ctx)
	}
	if errors.Is(err, jetstream.ErrConsumerNotFound) {
		// Not created yet, or being repositioned by a projector that just
		// took over: wait.
		return &jetstream.ConsumerInfo{NumPending: 1}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("consumer %s: %w", name, err)
	}
	return info, nil
}

func (n *Node) deleteConsumers(ctx context.Context) {
	for _, p := range n.Projectors() {
		p.Stop()
		if err := n.JS.DeleteConsumer(ctx, p.Stream(), p.Name()); err != nil && !errors.Is(err, jetstream.ErrConsumerNotFound) {
			n.log.Warn("delete rebuild consumer", "consumer", p.Name(), "err", err)
		}
	}
}

func verify(ctx context.Context, liveURL, rebuiltURL string, res *RebuildResult) error {
	sums := make([]map[string]string, 2)
	for i, u := range []string{liveURL, rebuiltURL} {
		conn, err := pgx.Connect(ctx, u)
		if err != nil {
			return fmt.Errorf("verify: %w", err)
		}
		sums[i], err = checksum.Projections(ctx, conn)
		conn.Close(ctx)
		if err != nil {
			return fmt.Errorf("verify: %w", err)
		}
	}
	res.Live, res.Rebuilt = sums[0], sums[1]
	res.Differ = append(res.Differ, checksum.Diff(sums[0], sums[1])...)
	res.Verified = len(res.Differ) == 0
	return nil
}

// reachableNATS is the log a rebuild reads: the configured NATS, else a
// running spine's embedded server, else "" (start the embedded server). A
// server that refuses spine's credentials is an error: it is there, and
// starting a second one on its store is not an answer.
func reachableNATS(cfg config.Config) (string, error) {
	if cfg.NATSURL != "" {
		return cfg.NATSURL, nil
	}
	if cfg.NATSListen == "" || cfg.NATSListen == "off" {
		return "", nil
	}
	u := "nats://" + cfg.NATSListen
	opts, err := NATSAuth(cfg, u)
	if err != nil {
		return "", err
	}
	nc, err := nats.Connect(u, append(opts, nats.Timeout(time.Second), nats.MaxReconnects(0))...)
	if errors.Is(err, nats.ErrAuthorization) {
		return "", fmt.Errorf("rebuild: the NATS server at %s refused spine's client token (%s)", u, NATSAuthHint(cfg))
	}
	if err != nil {
		return "", nil
	}
	nc.Close()
	return u, nil
}

func createDatabase(ctx context.Context, liveURL, name string) (string, error) {
	u, err := pgboot.CreateDatabase(ctx, liveURL, name)
	if err != nil {
		return "", fmt.Errorf("rebuild (the live database must be a postgres:// URL, %s): %w", config.EnvDatabaseURL, err)
	}
	return u, nil
}

func dropDatabase(ctx context.Context, liveURL, name string, log *slog.Logger) {
	if err := pgboot.DropDatabase(ctx, liveURL, name); err != nil {
		log.Warn("drop rebuild database", "database", name, "err", err)
	}
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return strings.ToLower(hex.EncodeToString(b))
}
