package streams

import (
	"context"
	"errors"
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

// nextBatchSize is how many messages to ask for after a fetch of n
// messages and size bytes: FetchMaxBytes at their mean size, between 1 and
// max.
func nextBatchSize(n, size, max int) int {
	if size == 0 {
		return max
	}
	return min(max, FetchMaxBytes*n/size+1)
}

// errDeliveryLost: the consumer delivered a message this projector never
// received. A clustered consumer's leader sends a message only once its
// followers hold it as delivered; a leader whose server stops with
// deliveries still on their way leaves them pending under the new leader
// until AckWait, while the next deliveries arrive, and acking one of those
// (AckAll) would ack the lost ones too, and the checkpoint would pass them.
// Only positioning the consumer at the checkpoint again mends it.
var errDeliveryLost = errors.New("a delivery never arrived")

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
