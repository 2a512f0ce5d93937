package importer

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	json "github.com/spinehq/spine/internal/fastjson"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/spinehq/spine/apps"
	"github.com/spinehq/spine/streams"
)

// Sink is where an import's envelopes go: spine's HTTP ingest (the CLI's
// default), JetStream directly, or nowhere (a dry run).
type Sink interface {
	// Recorded and Publish take what the translation asks and sends (an
	// error from Publish stops the import).
	apps.Sink
	// Flush waits for everything published and says how it went.
	Flush(ctx context.Context) (SinkStats, error)
}

// SinkStats is what a sink learned while publishing.
type SinkStats struct {
	Duplicates int       // already stored (same id within the duplicate window)
	Refused    []Refusal // envelopes spine refused
}

// DiscardSink publishes nothing: a dry run.
type DiscardSink struct{}

// Recorded reports nothing recorded.
func (DiscardSink) Recorded(context.Context, string) (apps.Recorded, error) {
	return apps.Recorded{}, nil
}

// Publish drops the envelope.
func (DiscardSink) Publish(context.Context, *streams.Envelope) error { return nil }

// Flush has nothing to wait for.
func (DiscardSink) Flush(context.Context) (SinkStats, error) { return SinkStats{}, nil }

// JetStreamSink publishes straight to SPINE_SESSIONS, as a trusted
// producer, with acks awaited in windows so memory stays bounded.
type JetStreamSink struct {
	js      jetstream.JetStream
	pub     *streams.Publisher
	stream  jetstream.Stream
	pending []jetstream.PubAckFuture
	stats   SinkStats
	// started holds, by apps.Key(session id), every session whose start the
	// log held when the import asked first (nil until then): a session
	// not in it needs no lookup, so a fresh import makes none.
	started map[uint64]struct{}
}

// asyncWindow bounds publishes awaiting their ack.
const asyncWindow = 1024

// NewJetStreamSink returns a sink on js; SPINE_SESSIONS must exist.
func NewJetStreamSink(ctx context.Context, js jetstream.JetStream) (*JetStreamSink, error) {
	st, err := js.Stream(ctx, streams.StreamSessions)
	if err != nil {
		return nil, fmt.Errorf("find stream %s: %w", streams.StreamSessions, err)
	}
	return &JetStreamSink{js: js, pub: streams.NewPublisher(js), stream: st}, nil
}

// Recorded reads the session's last start, chunk and end from the log,
// the source of truth: what it holds, the recorder has or will have. The
// first call lists the sessions whose start the log holds (see
// loadStarted); only those are looked up one by one, so a fresh import
// costs a request per 100 000 recorded sessions rather than one per
// imported session. A sink is one import's: the list is not read again.
func (j *JetStreamSink) Recorded(ctx context.Context, sessionID string) (apps.Recorded, error) {
	if j.started == nil {
		if err := j.loadStarted(ctx); err != nil {
			return apps.Recorded{}, err
		}
	}
	if _, ok := j.started[apps.Key(sessionID)]; !ok {
		return apps.Recorded{}, nil
	}
	// Listed (or sharing a key with a listed one): the log says exactly.
	var r apps.Recorded
	var err error
	var start []byte
	if r.Started, start, err = j.last(ctx, streams.SessionSubject(sessionID, streams.TypeSessionStart)); err != nil {
		return r, err
	}
	if !r.Started {
		return r, nil
	}
	var st struct {
		Kind string `json:"kind"`
	}
	_ = json.Unmarshal(start, &st)
	r.Kind = st.Kind
	var end []byte
	if r.Ended, end, err = j.last(ctx, streams.SessionSubject(sessionID, streams.TypeSessionEnd)); err != nil {
		return r, err
	}
	if r.Ended {
		var e struct {
			Usage     *streams.Usage `json:"usage"`
			TotalCost *float64       `json:"totalCost"`
		}
		_ = json.Unmarshal(end, &e)
		r.Usage, r.Cost = e.Usage, e.TotalCost
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

// loadStarted lists the subjects of every recorded start, a page of up to
// 100 000 at a time (STREAM.INFO with a subject filter, as nats.go's
// Stream.Info does, but keeping an 8-byte key per session rather than
// every subject of the stream at once).
func (j *JetStreamSink) loadStarted(ctx context.Context) error {
	started := map[uint64]struct{}{}
	filter := streams.SessionSubject("*", streams.TypeSessionStart) // spine.session.*.start
	prefix, suffix, _ := strings.Cut(filter, "*")
	api := jsAPIPrefix(j.js.Options()) + "STREAM.INFO." + streams.StreamSessions
	for offset := 0; ; {
		req, _ := json.Marshal(map[string]any{"subjects_filter": filter, "offset": offset})
		rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		msg, err := j.js.Conn().RequestWithContext(rctx, api, req)
		cancel()
		if err != nil {
			return fmt.Errorf("list recorded sessions: %w", err)
		}
		var resp struct {
			Total int `json:"total"`
			State struct {
				Subjects map[string]uint64 `json:"subjects"`
			} `json:"state"`
			Error *struct {
				Code        int    `json:"code"`
				Description string `json:"description"`
			} `json:"error"`
		}
		if err := json.Unmarshal(msg.Data, &resp); err != nil {
			return fmt.Errorf("list recorded sessions: %w", err)
		}
		if resp.Error != nil {
			return fmt.Errorf("list recorded sessions: %s (%d)", resp.Error.Description, resp.Error.Code)
		}
		for subj := range resp.State.Subjects {
			started[apps.Key(strings.TrimSuffix(strings.TrimPrefix(subj, prefix), suffix))] = struct{}{}
		}
		offset += len(resp.State.Subjects)
		if len(resp.State.Subjects) == 0 || offset >= resp.Total {
			break
		}
	}
	j.started = started
	return nil
}

// jsAPIPrefix is the JetStream API prefix js sends its requests under.
func jsAPIPrefix(o jetstream.JetStreamOptions) string {
	switch {
	case o.Domain != "":
		return "$JS." + o.Domain + ".API."
	case o.APIPrefix != "":
		return strings.TrimSuffix(o.APIPrefix, ".") + "."
	}
	return jetstream.DefaultAPIPrefix
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
