package bench

import (
	"strings"
	"time"

	"github.com/spinehq/spine/streams"
)

// recorderPhases adds up the time every instance's recorder projectors
// (one, or one per partition led) have spent in each phase of their loop.
func (tb *testbed) recorderPhases() map[string]time.Duration {
	sum := map[string]time.Duration{}
	for _, in := range tb.instances {
		for _, p := range in.node.Projectors() {
			if !isRecorder(p) {
				continue
			}
			for ph, d := range p.Phases() {
				sum[ph] += d
			}
		}
	}
	return sum
}

// isRecorder: the recorder's projector ("recorder" on SPINE_SESSIONS), or
// one of its partitions' ("recorder-p<k>" on SPINE_SESSIONS_P).
func isRecorder(p *streams.Projector) bool {
	return p.Name() == "recorder" || (p.Stream() == streams.StreamPartitioned && strings.HasPrefix(p.Name(), "recorder-p"))
}

// phaseSeconds is where a phase's time went between two readings of
// recorderPhases, in seconds of the recorder's loop.
func phaseSeconds(before, after map[string]time.Duration) map[string]float64 {
	out := make(map[string]float64, len(after))
	for ph, d := range after {
		out[ph] = round((d - before[ph]).Seconds())
	}
	return out
}
