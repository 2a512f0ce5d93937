package streams

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

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

// errDeliveryLost: the consumer delivered a message this projector never
// received. A clustered consumer's leader sends a message only once its
// followers hold it as delivered; a leader whose server stops with
// deliveries still on their way leaves them pending under the new leader
// until AckWait, while the next deliveries arrive, and acking one of those
// (AckAll) would ack the lost ones too, and the checkpoint would pass them.
// Only positioning the consumer at the checkpoint again mends it.
var errDeliveryLost = errors.New("a delivery never arrived")

// unbroken reports whether raw continues the deliveries received up to
// consumer sequence after: the consumer numbers every delivery, and a
// redelivery too, one more than the last, so a message numbered otherwise
// means one delivery went elsewhere (or is a redelivery, which a projector
// that acks every batch it applies never needs). It returns the last
// message's consumer sequence.
func unbroken(raw []jetstream.Msg, after uint64) (uint64, error) {
	for _, m := range raw {
		md, err := m.Metadata()
		if err != nil {
			return after, fmt.Errorf("message metadata: %w", err)
		}
		if md.Sequence.Consumer != after+1 {
			return after, fmt.Errorf("%w: delivery %d came after %d (stream sequence %d)",
				errDeliveryLost, md.Sequence.Consumer, after, md.Sequence.Stream)
		}
		after = md.Sequence.Consumer
	}
	return after, nil
}

// lostDeliveries reports whether the consumer has delivered past consumer
// sequence received, the last delivery this projector got. It is asked
// when a failed fetch may have taken deliveries with it and no delivery
// has come since to show a break.
func lostDeliveries(ctx context.Context, cons jetstream.Consumer, received uint64) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	info, err := cons.Info(ctx)
	if err != nil {
		return false, err
	}
	return info.Delivered.Consumer > received, nil
}
