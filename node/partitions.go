package node

import (
	"context"
	crand "crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/spinehq/spine/recorder"
	"github.com/spinehq/spine/streams"
)

// Partitioned recording (SPINE_PARTITIONS=N > 1). Every node runs a
// partition manager. Nodes announce themselves with a PostgreSQL advisory
// lock in their own namespace, held for the node's life, so the live count
// is what pg_locks says and a dead node leaves it at once. Each manager
// leads at most its fair share, ceil(N / live nodes), of the partitions:
// it contends for free partitions while under its share and lets one go at
// a time while over it (a new node joined), which hands that partition over
// through the projector's own leadership lock and checkpoint.

// nodeLockNS is the advisory-lock namespace (the int4 pair's first key) of
// node presence. Projectors lock bigint keys, which pg_locks tells apart by
// objsubid.
const nodeLockNS = 70700

// tick is how often a manager looks at its share.
const tick = 300 * time.Millisecond

type partitionManager struct {
	n      *Node
	count  int
	opts   *Options
	conn   *pgxpool.Conn // holds the node's presence lock
	mu     sync.Mutex
	held   map[int]*streams.Projector
	over   int // consecutive ticks over the fair share
	cancel context.CancelFunc
	done   chan struct{}
}

func (n *Node) startPartitions(ctx context.Context, opts *Options) error {
	if err := streams.EnsurePartitioned(ctx, n.JS, n.cfg.Partitions, n.cfg.Replicas); err != nil {
		return err
	}
	m := &partitionManager{n: n, count: n.cfg.Partitions, opts: opts, held: map[int]*streams.Projector{},
		done: make(chan struct{})}
	if err := m.announce(ctx); err != nil {
		return err
	}
	m.balance(ctx) // take a first share before serving
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	m.cancel = cancel
	go m.run(runCtx)
	n.partitions = m
	return nil
}

// announce takes this node's presence lock on a connection of its own.
func (m *partitionManager) announce(ctx context.Context) error {
	conn, err := m.n.Pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("partitions: %w", err)
	}
	var b [4]byte
	_, _ = crand.Read(b[:])
	id := int32(binary.BigEndian.Uint32(b[:]) & 0x7fffffff)
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock($1::int, $2::int)`, nodeLockNS, id); err != nil {
		conn.Release()
		return fmt.Errorf("partitions: announce node: %w", err)
	}
	m.conn = conn
	return nil
}

func (m *partitionManager) run(ctx context.Context) {
	defer close(m.done)
	t := time.NewTicker(tick)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			m.balance(ctx)
		}
	}
}

// liveNodes counts the nodes announced on this database.
func (m *partitionManager) liveNodes(ctx context.Context) (int, error) {
	var n int
	err := m.n.Pool.QueryRow(ctx, `SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted
		AND classid = $1::int::oid AND objsubid = 2 AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`,
		nodeLockNS).Scan(&n)
	return max(n, 1), err
}

// balance drops partitions that ended, then moves toward the fair share.
func (m *partitionManager) balance(ctx context.Context) {
	live, err := m.liveNodes(ctx)
	if err != nil {
		m.n.log.Warn("partitions: count nodes", "err", err)
		return
	}
	share := (m.count + live - 1) / live
	m.mu.Lock()
	defer m.mu.Unlock()
	m.dropEnded()
	switch {
	case len(m.held) > share:
		m.over++
		if m.over >= 3 { // a node joined and stayed: hand one partition over
			m.releaseOne()
			m.over = 0
		}
	case len(m.held) < share:
		m.over = 0
		m.contend(ctx, share)
	default:
		m.over = 0
	}
}

func (m *partitionManager) dropEnded() {
	for k, p := range m.held {
		if err := p.Err(); err != nil {
			if !errors.Is(err, streams.ErrNotLeader) {
				m.n.log.Warn("partition projector ended", "partition", k, "err", err)
			}
			m.n.removeProjector(p)
			delete(m.held, k)
		}
	}
}

// contend starts projectors for free partitions, from a random offset so
// nodes starting together spread out. A projector that finds another node
// leading ends with ErrNotLeader and is dropped on the next tick.
func (m *partitionManager) contend(ctx context.Context, share int) {
	start := rand.IntN(m.count)
	for i := 0; i < m.count && len(m.held) < share; i++ {
		k := (start + i) % m.count
		if m.held[k] != nil {
			continue
		}
		p, err := m.start(ctx, k)
		if err != nil {
			m.n.log.Warn("partitions: start", "partition", k, "err", err)
			continue
		}
		m.held[k] = p
	}
}

func (m *partitionManager) start(ctx context.Context, k int) (*streams.Projector, error) {
	rec := recorder.New(recorder.Config{Logger: m.n.log, Blobs: m.n.Library, FileCap: m.n.cfg.FileCap,
		Partitions: m.count, Partition: k})
	return m.n.StartProjector(ctx, streams.ProjectorConfig{Name: fmt.Sprintf("recorder-p%d", k),
		Stream: streams.StreamPartitioned, Filter: streams.PartitionSubjects(k), Handler: rec,
		BatchSize: m.opts.BatchSize, OnCommit: m.opts.OnCommit, OnTimes: m.opts.OnTimes, NoStandby: true})
}

// releaseOne stops the highest partition this node leads: its batch in
// flight commits, its lock is released, and another node takes it over.
func (m *partitionManager) releaseOne() {
	top := -1
	for k := range m.held {
		top = max(top, k)
	}
	if top < 0 {
		return
	}
	p := m.held[top]
	p.Stop()
	m.n.removeProjector(p)
	delete(m.held, top)
	m.n.log.Info("partition handed over", "partition", top)
}

// Leading lists the partitions this node leads now.
func (m *partitionManager) leading() []int {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []int
	for k, p := range m.held {
		if p.Leading() {
			out = append(out, k)
		}
	}
	return out
}

func (m *partitionManager) stop() {
	if m.cancel != nil {
		m.cancel()
		<-m.done
	}
	m.mu.Lock()
	for _, p := range m.held {
		p.Stop()
	}
	m.mu.Unlock()
	if m.conn != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, _ = m.conn.Exec(ctx, `SELECT pg_advisory_unlock_all()`)
		cancel()
		m.conn.Release()
		m.conn = nil
	}
}

// LeadingPartitions lists the recorder partitions this node leads (nil
// when the recorder is not partitioned).
func (n *Node) LeadingPartitions() []int {
	if n.partitions == nil {
		return nil
	}
	return n.partitions.leading()
}
