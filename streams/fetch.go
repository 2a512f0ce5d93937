package streams

// FetchMaxBytes bounds the bytes of one projector fetch, beside the batch's
// message count: 500 envelopes of 1 MiB would otherwise be held twice per
// projector (the batch applied and the one fetched meanwhile), whatever
// the HTTP in-flight budget allows in. It is four of the largest envelope,
// so any one message fits (the server would never deliver one larger than
// a fetch's bytes) and batches of small envelopes are bounded by count.
const FetchMaxBytes = 4 * MaxEnvelopeBytes
