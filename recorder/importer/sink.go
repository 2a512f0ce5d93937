package importer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/spinehq/spine/streams"
)

// Sink is where an import's envelopes go: spine's HTTP ingest (the CLI's
// default), JetStream directly, or nowhere (a dry run).
type Sink interface {
	// Recorded says what spine already holds of a session, so a re-import
	// publishes nothing a recorder would store twice or dead-letter.
	Recorded(ctx context.Context, sessionID string) (Recorded, error)
	// Publish sends one valid envelope. An error stops the import.
	Publish(ctx context.Context, e *streams.Envelope) error
	// Flush waits for everything published and says how it went.
	Flush(ctx context.Context) (SinkStats, error)
}

// Recorded is what spine holds of one session.
type Recorded struct {
	Started bool  // its start is recorded: do not publish another
	Ended   bool  // its end is recorded: publish nothing more
	LastSeq int64 // chunks at or below this seq are recorded
}

// SinkStats is what a sink learned while publishing.
type SinkStats struct {
	Duplicates int       // already stored (same id within the duplicate window)
	Refused    []Refusal // envelopes spine refused
}

// DiscardSink publishes nothing: a dry run.
type DiscardSink struct{}

// Recorded reports nothing recorded.
func (DiscardSink) Recorded(context.Context, string) (Recorded, error) { return Recorded{}, nil }

// Publish drops the envelope.
func (DiscardSink) Publish(context.Context, *streams.Envelope) error { return nil }

// Flush has nothing to wait for.
func (DiscardSink) Flush(context.Context) (SinkStats, error) { return SinkStats{}, nil }

// JetStreamSink publishes straight to SPINE_SESSIONS, as a trusted
// producer, with acks awaited in windows so memory stays bounded.
type JetStreamSink struct {
	pub     *streams.Publisher
	stream  jetstream.Stream
	pending []jetstream.PubAckFuture
	stats   SinkStats
}

// asyncWindow bounds publishes awaiting their ack.
const asyncWindow = 1024

// NewJetStreamSink returns a sink on js; SPINE_SESSIONS must exist.
func NewJetStreamSink(ctx context.Context, js jetstream.JetStream) (*JetStreamSink, error) {
	st, err := js.Stream(ctx, streams.StreamSessions)
	if err != nil {
		return nil, fmt.Errorf("find stream %s: %w", streams.StreamSessions, err)
	}
	return &JetStreamSink{pub: streams.NewPublisher(js), stream: st}, nil
}

// Recorded reads the session's last start, chunk and end from the log,
// the source of truth: what it holds, the recorder has or will have.
func (j *JetStreamSink) Recorded(ctx context.Context, sessionID string) (Recorded, error) {
	var r Recorded
	var err error
	if r.Started, _, err = j.last(ctx, streams.SessionSubject(sessionID, streams.TypeSessionStart)); err != nil {
		return r, err
	}
	if !r.Started {
		return r, nil
	}
	if r.Ended, _, err = j.last(ctx, streams.SessionSubject(sessionID, streams.TypeSessionEnd)); err != nil {
		return r, err
	}
	ok, data, err := j.last(ctx, streams.SessionSubject(sessionID, streams.TypeSessionChunk))
	if err != nil || !ok {
		return r, err
	}
	var c struct {
		Seq int64 `json:"seq"`
	}
	_ = json.Unmarshal(data, &c)
	r.LastSeq = c.Seq
	return r, nil
}

func (j *JetStreamSink) last(ctx context.Context, subject string) (bool, []byte, error) {
	m, err := j.stream.GetLastMsgForSubject(ctx, subject)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return false, nil, nil
	}
	if err != nil {
		return false, nil, fmt.Errorf("read %s: %w", subject, err)
	}
	return true, m.Data, nil
}

// Publish sends e without waiting; acks are collected in windows.
func (j *JetStreamSink) Publish(ctx context.Context, e *streams.Envelope) error {
	f, err := j.pub.PublishAsync(e, nil)
	var rej *streams.Rejection
	if errors.As(err, &rej) {
		j.stats.Refused = append(j.stats.Refused, Refusal{ID: e.ID, Code: rej.Reason, Reason: rej.Error()})
		return nil
	}
	if err != nil {
		return err
	}
	j.pending = append(j.pending, f)
	if len(j.pending) >= asyncWindow {
		return j.await(ctx, len(j.pending)/2)
	}
	return nil
}

// Flush waits for every ack.
func (j *JetStreamSink) Flush(ctx context.Context) (SinkStats, error) {
	err := j.await(ctx, len(j.pending))
	return j.stats, err
}

func (j *JetStreamSink) await(ctx context.Context, n int) error {
	for _, f := range j.pending[:n] {
		select {
		case ack := <-f.Ok():
			if ack.Duplicate {
				j.stats.Duplicates++
			}
		case err := <-f.Err():
			return fmt.Errorf("publish %s: %w", f.Msg().Header.Get(jetstream.MsgIDHeader), err)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	j.pending = append(j.pending[:0], j.pending[n:]...)
	return nil
}
