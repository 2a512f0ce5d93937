package streams

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"

	"github.com/nats-io/nats.go/jetstream"
)

// Partitioned projection. With SPINE_PARTITIONS=N (N > 1), the recorder's
// work is split N ways by session id with JetStream's own means: the stream
// SPINE_SESSIONS_P sources SPINE_SESSIONS through subject transforms, so
//
//	spine.session.<id>.<type>   → spine.p.<partition(N, id)>.session.<id>.<type>
//	spine.mcp.<id>.call         → spine.p.<partition(N, id)>.mcp.<id>.call
//	spine.worker.<id>.disconnect → spine.all.worker.<id>.disconnect
//
// and partition k's projector consumes spine.p.<k>.> plus spine.all.> (a
// disconnect concerns every partition: each ends its own live sessions).
// One session is always in one partition, so its order is kept. The
// partition function is nats-server's: FNV-1a 32 of the id, modulo N.
// SPINE_SESSIONS stays the contract and the source of truth.

// StreamPartitioned is the sourced, partitioned view of SPINE_SESSIONS.
const StreamPartitioned = "SPINE_SESSIONS_P"

const (
	subjectPartition = "spine.p."
	subjectAll       = "spine.all."
	partitionsMeta   = "spine_partitions"
)

// ErrPartitionsChanged: the partitioned stream was made for another N.
var ErrPartitionsChanged = errors.New("partition count changed")

// Partition is the partition of a session id among n: the same function
// nats-server's {{partition(n,1)}} transform computes.
func Partition(sessionID string, n int) int {
	if n <= 1 {
		return 0
	}
	h := fnv.New32a()
	h.Write([]byte(sessionID))
	return int(h.Sum32() % uint32(n))
}

// PartitionSubjects are the filter subjects of partition k's consumer.
func PartitionSubjects(k int) []string {
	return []string{subjectPartition + strconv.Itoa(k) + ".>", subjectAll + ">"}
}

// OriginalSubject maps a subject of the partitioned stream back to the one
// the envelope was published on; other subjects are returned as they are.
func OriginalSubject(subject string) string {
	if rest, ok := strings.CutPrefix(subject, subjectAll); ok {
		return "spine." + rest
	}
	if rest, ok := strings.CutPrefix(subject, subjectPartition); ok {
		if _, tail, ok := strings.Cut(rest, "."); ok {
			return "spine." + tail
		}
	}
	return subject
}

// PartitionedStreamConfig is SPINE_SESSIONS_P for n partitions.
func PartitionedStreamConfig(n, replicas int) jetstream.StreamConfig {
	p := fmt.Sprintf("{{partition(%d,1)}}", n)
	return jetstream.StreamConfig{
		Name:        StreamPartitioned,
		Description: fmt.Sprintf("SPINE_SESSIONS split %d ways by session id for partitioned projectors", n),
		Storage:     jetstream.FileStorage,
		Replicas:    max(replicas, 1),
		Metadata:    map[string]string{partitionsMeta: strconv.Itoa(n)},
		Sources: []*jetstream.StreamSource{{
			Name: StreamSessions,
			SubjectTransforms: []jetstream.SubjectTransformConfig{
				{Source: subjectSession + "*.*", Destination: subjectPartition + p + ".session.{{wildcard(1)}}.{{wildcard(2)}}"},
				{Source: subjectMCP + "*.call", Destination: subjectPartition + p + ".mcp.{{wildcard(1)}}.call"},
				{Source: subjectWorker + "*.disconnect", Destination: subjectAll + "worker.{{wildcard(1)}}.disconnect"},
			},
		}},
	}
}

// EnsurePartitioned creates SPINE_SESSIONS_P for n partitions, or checks
// that the existing one was made for n: changing n needs a new stream and a
// rebuild, never a silent re-split of sessions already projected.
func EnsurePartitioned(ctx context.Context, js jetstream.JetStream, n, replicas int) error {
	if st, err := js.Stream(ctx, StreamPartitioned); err == nil {
		info, err := st.Info(ctx)
		if err != nil {
			return fmt.Errorf("stream %s: %w", StreamPartitioned, err)
		}
		if have := info.Config.Metadata[partitionsMeta]; have != strconv.Itoa(n) {
			return fmt.Errorf("%w: %s was made for %s partitions, SPINE_PARTITIONS says %d; delete the stream and rebuild the projections to change it",
				ErrPartitionsChanged, StreamPartitioned, have, n)
		}
	}
	if _, err := js.CreateOrUpdateStream(ctx, PartitionedStreamConfig(n, replicas)); err != nil {
		return fmt.Errorf("ensure stream %s: %w", StreamPartitioned, err)
	}
	return nil
}
