package bench

import (
	"context"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/spinehq/spine/internal/config"
	"github.com/spinehq/spine/node"
	"github.com/spinehq/spine/streams"
)

// ScaleNote says what N instances do today, in every result.
const ScaleNote = "The recorder is not partitioned in this run: every instance runs it, but it has one leader " +
	"at a time (a PostgreSQL advisory lock on its name) and the others stand by to take over when it dies, " +
	"so more instances spread publishing over more NATS connections but do not add projection throughput. " +
	sharedCoresNote

// PartitionedNote replaces ScaleNote in a run with --partitions.
const PartitionedNote = "The recorder is partitioned by session id (SPINE_PARTITIONS): each instance leads a fair " +
	"share of the partitions (handed over one at a time when an instance joins; the bursts start once they are " +
	"spread), so projection is spread over the instances; the other projectors have one leader. " +
	sharedCoresNote

// sharedCoresNote says what the per-instance figures can show when the
// instances share the machine (docs/performance.md).
const sharedCoresNote = "All instances run in this one process, on the same cores as the NATS servers and " +
	"PostgreSQL. burst gives each instance's part of spine's first burst: what its recorder committed, its loops' " +
	"busy seconds (outside waiting for a fetch) and chunksPerBusySec, its chunks per second of its busiest loop's " +
	"busy time: the rate it would give with cores of its own if NATS and PostgreSQL kept up. Their sum " +
	"(sumChunksPerBusySec) is no measured throughput: it counts each instance as if the others did not share its " +
	"cores, NATS and PostgreSQL, which they did, so it overstates what these cores give (the whole run's " +
	"chunksPerSec is what they gave), and it is no forecast for N machines either (a loop's busy time holds its " +
	"waits for a core, while N machines on one PostgreSQL would meet its limit). A gain can be read off only a " +
	"run that was not CPU-bound (burst.cpu: machineBusy well below 1, processCores below cores): the whole run's " +
	"chunksPerSec and the instances' chunksPerBusySec at 1 and at N instances."

// Scale is how the run's spine was laid out and what each instance did.
type Scale struct {
	Instances  int    `json:"instances"`
	Partitions int    `json:"partitions,omitzero"` // of the recorder (SPINE_PARTITIONS); absent: not partitioned
	NATS       string `json:"nats"`                // "embedded" (one in-process server) or "cluster" (three, routed)
	Replicas   int    `json:"replicas"`            // of spine's streams and the raw baseline's
	// PublishedByInstance counts the spine path's envelopes published
	// through each instance's NATS connection (sessions are dealt to the
	// instances in turn; a session's envelopes all go through one).
	PublishedByInstance []int64 `json:"publishedByInstance"`
	// RecorderBatchesByInstance counts the recorder batches each instance
	// committed while it led.
	RecorderBatchesByInstance []int64 `json:"recorderBatchesByInstance"`
	// RecorderLeaders is how many instances committed any recorder batch.
	RecorderLeaders int `json:"recorderLeaders"`
	// Burst is each instance's part in spine's first burst (absent in a
	// soak).
	Burst *ScaleBurst `json:"burst,omitempty"`
	Note  string      `json:"note"`
}

// instance is one spine node of the testbed and what passed through it.
type instance struct {
	node      *node.Node
	published atomic.Int64
	// What its recorder projectors committed, each envelope counted once
	// however often it was delivered (commits.onCommit's fresh).
	envelopes, chunks, batches atomic.Int64
}

// startInstances starts the run's log (one embedded server, or a cluster
// with cfg.Cluster) and cfg.Instances nodes on it, all on the run's
// database and all reporting commits to tb.commits, whichever leads.
func (tb *testbed) startInstances(ctx context.Context, cfg Config) error {
	secret := randomHex(32)    // one token secret, as a deployment shares one
	natsToken := randomHex(32) // the first instance's NATS client token, which the others present
	tb.replicas = 1
	if cfg.Cluster {
		c, err := startCluster(ctx, tb.dir)
		if err != nil {
			return err
		}
		tb.cluster, tb.replicas = c, clusterSize
	}
	tb.partitions = cfg.Partitions
	count := max(cfg.Instances, 1) // other benchmarks pass a Config without defaults
	for i := range count {
		nodeCfg := config.Config{DatabaseURL: tb.db.url, NATSListen: "off", HTTPAddr: "127.0.0.1:0",
			DataDir: filepath.Join(tb.dir, fmt.Sprintf("node%d", i+1)), TokenSecret: secret, Replicas: tb.replicas,
			Partitions: cfg.Partitions, OrgBytesPerSec: cfg.OrgBytesPerSec, OrgEnvelopesPerSec: cfg.OrgEnvelopesPerSec}
		switch {
		case tb.cluster != nil:
			nodeCfg.NATSURL = tb.cluster.serverURL(i)
		case i == 0 && count > 1:
			nodeCfg.NATSListen = "127.0.0.1:0" // the others connect to the first one's server
			nodeCfg.NATSToken = natsToken
		case i > 0:
			nodeCfg.NATSURL, nodeCfg.NATSToken = tb.instances[0].node.NATSURL(), natsToken
		}
		inst := &instance{}
		onCommit := func(last uint64, msgs []streams.Message) {
			var fresh counted
			if cfg.Partitions > 1 {
				// Partitioned projectors read SPINE_SESSIONS_P: count each
				// message by its SPINE_SESSIONS sequence, which the sourcing
				// stamps in Nats-Stream-Source.
				fresh = tb.commits.onCommitOrigin(msgs)
			} else {
				fresh = tb.commits.onCommit(last, msgs)
			}
			inst.batches.Add(1)
			inst.envelopes.Add(fresh.envelopes)
			inst.chunks.Add(fresh.chunks)
		}
		n, err := node.Start(ctx, nodeCfg, nil, &node.Options{BatchSize: cfg.Batch, OnCommit: onCommit,
			OnTimes: tb.commits.onTimes})
		if err != nil {
			return fmt.Errorf("start node %d: %w", i+1, err)
		}
		inst.node = n
		tb.instances = append(tb.instances, inst)
	}
	tb.node = tb.instances[0].node
	if cfg.Partitions > 1 {
		if err := tb.waitSpread(ctx); err != nil {
			return err
		}
	}
	if cfg.DuplicateWindow > 0 {
		return setDuplicateWindow(ctx, tb.node.JS, streams.StreamSessions, cfg.DuplicateWindow)
	}
	return nil
}

// setDuplicateWindow changes a stream's duplicate window (Config.DuplicateWindow).
func setDuplicateWindow(ctx context.Context, js jetstream.JetStream, name string, d time.Duration) error {
	st, err := js.Stream(ctx, name)
	if err != nil {
		return fmt.Errorf("stream %s: %w", name, err)
	}
	info, err := st.Info(ctx)
	if err != nil {
		return fmt.Errorf("stream %s: %w", name, err)
	}
	c := info.Config
	c.Duplicates = d
	if _, err := js.UpdateStream(ctx, c); err != nil {
		return fmt.Errorf("stream %s: duplicate window %s: %w", name, d, err)
	}
	return nil
}

// stopInstances stops the nodes, the last first (the first may host the
// others' NATS server), then the cluster.
func (tb *testbed) stopInstances() {
	for i := len(tb.instances) - 1; i >= 0; i-- {
		tb.instances[i].node.Stop()
	}
	tb.instances, tb.node = nil, nil
	tb.cluster.stop()
}

// scale reports the layout and each instance's share.
func (tb *testbed) scale() *Scale {
	s := &Scale{Instances: len(tb.instances), NATS: "embedded", Replicas: tb.replicas, Burst: tb.burst, Note: ScaleNote}
	if tb.partitions > 1 {
		s.Partitions, s.Note = tb.partitions, PartitionedNote
	}
	if tb.cluster != nil {
		s.NATS = "cluster"
	}
	for _, inst := range tb.instances {
		batches := inst.batches.Load()
		s.PublishedByInstance = append(s.PublishedByInstance, inst.published.Load())
		s.RecorderBatchesByInstance = append(s.RecorderBatchesByInstance, batches)
		if batches > 0 {
			s.RecorderLeaders++
		}
	}
	return s
}

// setRedaction turns redaction at the door on or off on every instance.
func (tb *testbed) setRedaction(on bool) {
	for _, inst := range tb.instances {
		inst.node.Publisher.Unredacted = !on
	}
}

// publish sends e through instance i mod N and counts it there.
func (tb *testbed) publish(i int, e *streams.Envelope) (jetstream.PubAckFuture, error) {
	inst := tb.instances[i%len(tb.instances)]
	f, err := inst.node.Publisher.PublishAsync(e, nil)
	if err == nil {
		inst.published.Add(1)
	}
	return f, err
}

// router deals sessions to the instances in turn, in the order it first
// sees them, so all of a session's envelopes go through one connection and
// keep their order.
type router struct {
	tb *testbed
	of map[string]int
}

func (tb *testbed) router() *router { return &router{tb: tb, of: map[string]int{}} }

func (r *router) publish(e *streams.Envelope) (jetstream.PubAckFuture, error) {
	i, ok := r.of[e.SessionID]
	if !ok {
		i = len(r.of)
		r.of[e.SessionID] = i
	}
	return r.tb.publish(i, e)
}
