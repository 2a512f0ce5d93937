package bench

import "github.com/spinehq/spine/streams"

// burst is a throughput phase's traffic, built and encoded before the clock
// starts so both paths time only what they do with it.
type burst struct {
	envs   []*streams.Envelope
	data   [][]byte // each envelope as JSON: what the raw path publishes
	counts counts
}

func newBurst(envs []*streams.Envelope) (*burst, error) {
	b := &burst{envs: envs, data: make([][]byte, len(envs))}
	for i, e := range envs {
		data, err := e.Marshal()
		if err != nil {
			return nil, err
		}
		b.data[i] = data
		b.counts.add(e, len(data))
	}
	return b, nil
}
