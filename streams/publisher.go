package streams

import (
	"context"
	"fmt"
	"github.com/spinehq/spine/secrets"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Header names spine sets on published messages.
const (
	// HeaderOrg and HeaderMember name the verified caller when an envelope
	// came through spine's HTTP ingest; the recorder refuses one that writes
	// into another member's session. NATS producers are trusted and omit them.
	HeaderOrg    = "Spine-Org"
	HeaderMember = "Spine-Member"
	// HeaderRunner names the desktop runner whose token sent the envelope
	// (docs/desktop.md#recording-the-tasks-app-session): the recorder takes
	// its envelopes other than a start only for a session whose workerId is
	// that runner, in log order.
	HeaderRunner = "Spine-Runner"
	// HeaderRedacted is the fingerprint of the rules a Publisher redacted
	// the envelope with (secrets.Fingerprint): a reader that redacts with
	// the same rules may take the envelope as it is, since a second pass
	// changes nothing; one without it, or with another, redacts again.
	HeaderRedacted = "Spine-Redacted"
)

// Publisher validates envelopes, removes the secrets from their free text
// (see Envelope.Redacted) and publishes them with their id as Nats-Msg-Id,
// so a retried publish is stored once. An envelope from a verified caller
// is deduplicated within that caller's ids only (MsgID). It is the door of
// every envelope: HTTP ingest, importers and trusted NATS producers all
// publish through one, so nothing secret reaches the log.
type Publisher struct {
	js jetstream.JetStream
	// Unredacted publishes envelopes as given. Only spine bench sets it,
	// to measure what redaction costs; false (the zero value) redacts.
	Unredacted bool
}

// NewPublisher returns a publisher on js.
func NewPublisher(js jetstream.JetStream) *Publisher { return &Publisher{js: js} }

// PublishOpts are optional settings for one publish.
type PublishOpts struct {
	// Caller is the verified caller, stamped as headers; it also scopes the
	// envelope's Nats-Msg-Id (see MsgID). Empty: a trusted producer.
	Caller Owner
	// Runner is the runnerId of the desktop runner token that sent it,
	// stamped as HeaderRunner; "" for a member or a trusted producer.
	Runner string
}

// MsgID is the Nats-Msg-Id an envelope is published with. A verified
// caller's ids are prefixed with its org and member, so the id another
// tenant used (or will use) can never make this caller's envelope a
// duplicate, and a duplicate answer tells a caller only about its own ids.
// Trusted producers keep the plain id. '/' is in no id, org or member, so a
// scoped id can equal neither another caller's nor a plain one.
func MsgID(id string, opts *PublishOpts) string {
	if opts == nil || opts.Caller.Org == "" {
		return id
	}
	return opts.Caller.Org + "/" + opts.Caller.Member + "/" + id
}

// Publish validates e and publishes it, waiting for JetStream's ack.
// Duplicate reports whether JetStream had already stored this id.
func (p *Publisher) Publish(ctx context.Context, e *Envelope, opts *PublishOpts) (ack *jetstream.PubAck, err error) {
	msg, err := p.message(e, opts)
	if err != nil {
		return nil, err
	}
	ack, err = p.js.PublishMsg(ctx, msg)
	if err != nil {
		return nil, fmt.Errorf("publish %s %s: %w", e.Type, e.ID, err)
	}
	return ack, nil
}

// PublishAsync validates e and publishes it without waiting; the future
// resolves when JetStream acks.
func (p *Publisher) PublishAsync(e *Envelope, opts *PublishOpts) (jetstream.PubAckFuture, error) {
	msg, err := p.message(e, opts)
	if err != nil {
		return nil, err
	}
	f, err := p.js.PublishMsgAsync(msg)
	if err != nil {
		return nil, fmt.Errorf("publish %s %s: %w", e.Type, e.ID, err)
	}
	return f, nil
}

// afterRedaction says so in a refusal of the redacted envelope: the
// sizes it quotes are not the ones the producer sent.
func afterRedaction(err error) error {
	rej, ok := AsRejection(err)
	if !ok {
		return err
	}
	out := *rej
	out.Detail += " after redaction (each secret becomes " + secrets.Redacted + ")"
	return &out
}

func (p *Publisher) message(e *Envelope, opts *PublishOpts) (*nats.Msg, error) {
	if err := e.Validate(); err != nil {
		return nil, err
	}
	if r := e; !p.Unredacted {
		// [REDACTED] can be longer than the secret it replaces: what is
		// published must pass the field bounds the projectors check.
		if e = e.Redacted(); e != r {
			if err := e.Validate(); err != nil {
				return nil, afterRedaction(err)
			}
		}
	}
	data, err := e.Marshal()
	if err != nil {
		return nil, err
	}
	if len(data) > MaxEnvelopeBytes {
		return nil, Reject(ReasonTooLarge, "envelope is %d bytes, limit %d", len(data), MaxEnvelopeBytes)
	}
	msg := nats.NewMsg(e.Subject())
	msg.Data = data
	msg.Header.Set(jetstream.MsgIDHeader, MsgID(e.ID, opts))
	if !p.Unredacted {
		msg.Header.Set(HeaderRedacted, secrets.Fingerprint())
	}
	if opts != nil && opts.Caller.Org != "" {
		msg.Header.Set(HeaderOrg, opts.Caller.Org)
		msg.Header.Set(HeaderMember, opts.Caller.Member)
	}
	if opts != nil && opts.Runner != "" {
		msg.Header.Set(HeaderRunner, opts.Runner)
	}
	return msg, nil
}
