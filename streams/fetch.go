package streams

import "github.com/nats-io/nats.go/jetstream"

// FetchMaxBytes is what one projector fetch aims to hold, beside the
// batch's message count: 500 envelopes of 1 MiB would otherwise be held
// twice per projector (the batch applied and the one fetched meanwhile),
// whatever the HTTP in-flight budget allows in.
//
// It is not sent as the pull's max_bytes: on a clustered stream a pull
// bounded by bytes that meets a leadership change can leave deliveries
// this projector never receives (the three-node fault test lost messages
// that way about one run in three). Instead the next fetch asks for as
// many messages as FetchMaxBytes holds at the size of the last batch's.
const FetchMaxBytes = 4 * MaxEnvelopeBytes

// nextBatchSize is how many messages to ask for after a batch of raw:
// FetchMaxBytes at raw's mean size, between 1 and max.
func nextBatchSize(raw []jetstream.Msg, max int) int {
	var total int
	for _, m := range raw {
		total += len(m.Data())
	}
	if total == 0 {
		return max
	}
	return min(max, FetchMaxBytes*len(raw)/total+1)
}
