// Package streams is spine's log: the JetStream streams and subjects, the
// version-1 wire envelopes producers speak, the publisher that puts them on
// the log, and the projector runtime that turns the log into PostgreSQL rows.
//
// # The log is the truth
//
// Everything spine knows arrives as a message on a stream (StreamSessions
// for app sessions, MCP call records and worker disconnects; StreamDLQ for
// what broke a rule). PostgreSQL only holds projections: every row can be
// rebuilt by replaying the streams into empty tables. EnsureStreams creates
// the streams, or brings them to the current configuration, idempotently;
// StartEmbedded runs an in-process nats-server for a single spine and for
// tests.
//
// # Envelopes, version 1
//
// An Envelope is one JSON object per message: v, type, id, at, and the
// fields of its type (docs/design.md#envelopes). Decode parses and validates untrusted
// bytes; every failure is a *Rejection whose Reason (malformed_json,
// unknown_app, invalid_id, …) is stable enough to be a metric label and is
// what the dead letter carries. Producers may add fields freely; unknown
// ones are ignored, never refused. There is no field that could carry a
// credential. Subject maps an envelope to spine.session.<sessionId>.<kind>,
// spine.worker.<workerId>.disconnect or spine.mcp.<sessionId>.call; ids are
// subject-safe tokens, so an envelope can never name a wildcard or another
// session's subject, and CheckSubject refuses one filed under the wrong one.
//
// # Publishing
//
// A Publisher validates an envelope before anything reaches the log and
// publishes it with its id as Nats-Msg-Id, so a producer that retries within
// DuplicateWindow stores its envelope once (the PubAck says Duplicate). A
// verified caller's id is scoped to its org and member (MsgID): another
// tenant's ids can neither make its envelopes duplicates nor be probed.
//
//	pub := streams.NewPublisher(js)
//	e, err := streams.Decode(body) // or build an Envelope and Validate it
//	if err != nil {
//		return err // a *Rejection: tell the producer why
//	}
//	ack, err := pub.Publish(ctx, e, nil)
//
// # Projectors: exactly once in effect
//
// A Projector reads one stream through a durable pull consumer and hands
// batches to a Handler inside one PostgreSQL transaction that also advances
// its row in projector_checkpoints. It acks only after the commit, and skips
// anything redelivered at or below the checkpoint, so a crash between commit
// and ack applies nothing twice. On start the consumer is recreated just
// after the checkpoint: PostgreSQL, not the consumer, says where to resume.
// One instance per projector name consumes at a time, holding a PostgreSQL
// advisory lock on the connection its transactions use; another instance
// with the same name stands by and takes over when that connection goes.
//
// A Handler returns one result per message. A *Rejection dead-letters that
// message, in the same transaction (the dead_letters table) and on
// StreamDLQ (headers Spine-Reason, Spine-Detail, Spine-Stream, Spine-Seq,
// Spine-Subject), with the owner who may read it (DeadLetterOwner;
// ListDeadLetters and GetDeadLetter read them back within an owner's
// scope), and the batch goes on: one bad message never blocks the
// ones behind it. A returned error rolls the batch back, and nothing is
// acked meanwhile. A failure of the connection or of the server's
// availability (IsTransient) is retried with backoff, without end. Any
// other may be one message's fault: the batch is applied one message per
// transaction, and the message that fails alone DefaultIsolateAfter times
// the same way is dead-lettered (unstorable, with the SQLSTATE and the
// database's message, or handler_error), so one message never stops a
// projector. Health reports a projector that stopped or keeps failing;
// node's /readyz names it.
//
//	p, err := streams.NewProjector(streams.ProjectorConfig{
//		Name:    "recorder",
//		Stream:  streams.StreamSessions,
//		Handler: rec, // Apply(ctx, tx, msgs) ([]error, error)
//		Pool:    pool,
//		JS:      js,
//	})
//	if err != nil {
//		return err
//	}
//	if err := p.Start(ctx); err != nil {
//		return err
//	}
//	defer p.Stop() // lets the batch in flight commit and ack
package streams
