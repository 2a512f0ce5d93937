package streams_test

import (
	"errors"
	"slices"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/spinehq/spine/streams"
)

func decodeFixture(t *testing.T, typ string) *streams.Envelope {
	t.Helper()
	e, err := streams.Decode([]byte(fixtures[typ]))
	if err != nil {
		t.Fatalf("Decode %s: %v", typ, err)
	}
	return e
}

func TestPublishTwiceStoresOnce(t *testing.T) {
	js := startJetStream(t)
	pub := streams.NewPublisher(js)
	e := decodeFixture(t, streams.TypeSessionChunk)

	first, err := pub.Publish(t.Context(), e, nil)
	if err != nil {
		t.Fatalf("first Publish: %v", err)
	}
	if first.Duplicate || first.Stream != streams.StreamSessions {
		t.Fatalf("first PubAck = %+v", first)
	}
	second, err := pub.Publish(t.Context(), e, nil)
	if err != nil {
		t.Fatalf("second Publish: %v", err)
	}
	if !second.Duplicate || second.Sequence != first.Sequence {
		t.Fatalf("second PubAck = %+v, want a duplicate of seq %d", second, first.Sequence)
	}
	if n := streamMsgs(t, js, streams.StreamSessions); n != 1 {
		t.Fatalf("stream holds %d messages, want 1", n)
	}

	s, err := js.Stream(t.Context(), streams.StreamSessions)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := s.GetMsg(t.Context(), first.Sequence)
	if err != nil {
		t.Fatalf("GetMsg: %v", err)
	}
	if raw.Subject != e.Subject() || raw.Header.Get(jetstream.MsgIDHeader) != e.ID {
		t.Fatalf("stored on %q with Nats-Msg-Id %q", raw.Subject, raw.Header.Get(jetstream.MsgIDHeader))
	}
	got, err := streams.Decode(raw.Data)
	if err != nil || got.ID != e.ID {
		t.Fatalf("stored bytes decode to %+v, %v", got, err)
	}
}

func TestPublishAsyncTwiceStoresOnce(t *testing.T) {
	js := startJetStream(t)
	pub := streams.NewPublisher(js)
	e := decodeFixture(t, streams.TypeSessionEnd)
	var acks []*jetstream.PubAck
	for range 2 {
		f, err := pub.PublishAsync(e, nil)
		if err != nil {
			t.Fatalf("PublishAsync: %v", err)
		}
		select {
		case ack := <-f.Ok():
			acks = append(acks, ack)
		case err := <-f.Err():
			t.Fatalf("async publish: %v", err)
		case <-waitCtx(t).Done():
			t.Fatal("no ack for the async publish")
		}
	}
	if acks[0].Duplicate || !acks[1].Duplicate {
		t.Fatalf("duplicate flags %v, %v; want false, true", acks[0].Duplicate, acks[1].Duplicate)
	}
	if n := streamMsgs(t, js, streams.StreamSessions); n != 1 {
		t.Fatalf("stream holds %d messages, want 1", n)
	}
}

func TestPublishStampsCaller(t *testing.T) {
	js := startJetStream(t)
	pub := streams.NewPublisher(js)
	ack, err := pub.Publish(t.Context(), decodeFixture(t, streams.TypeSessionStart),
		&streams.PublishOpts{Caller: streams.Owner{Org: "acme", Member: "ada"}})
	if err != nil {
		t.Fatalf("Publish: %v", err)
	}
	s, err := js.Stream(t.Context(), streams.StreamSessions)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := s.GetMsg(t.Context(), ack.Sequence)
	if err != nil {
		t.Fatalf("GetMsg: %v", err)
	}
	if raw.Header.Get(streams.HeaderOrg) != "acme" || raw.Header.Get(streams.HeaderMember) != "ada" {
		t.Fatalf("headers %v", raw.Header)
	}
}

// Deduplication is per caller: the same envelope id from another org, from
// another member of the org, or from a trusted producer is stored, and only
// the caller's own retry is a duplicate.
func TestPublishDeduplicatesPerCaller(t *testing.T) {
	js := startJetStream(t)
	pub := streams.NewPublisher(js)
	e := decodeFixture(t, streams.TypeSessionChunk)
	callers := []*streams.PublishOpts{{Caller: streams.Owner{Org: "o2", Member: "m1"}},
		{Caller: streams.Owner{Org: "o1", Member: "m1"}}, {Caller: streams.Owner{Org: "o1", Member: "m2"}}, nil}
	for _, opts := range callers {
		ack, err := pub.Publish(t.Context(), e, opts)
		if err != nil || ack.Duplicate {
			t.Fatalf("first publish by %+v = %+v, %v; want stored", opts, ack, err)
		}
	}
	for _, opts := range callers {
		if ack, err := pub.Publish(t.Context(), e, opts); err != nil || !ack.Duplicate {
			t.Fatalf("retry by %+v = %+v, %v; want a duplicate", opts, ack, err)
		}
	}
	if n := streamMsgs(t, js, streams.StreamSessions); n != uint64(len(callers)) {
		t.Fatalf("stream holds %d messages, want %d", n, len(callers))
	}
}

func TestPublishRefusesInvalidEnvelope(t *testing.T) {
	js := startJetStream(t)
	pub := streams.NewPublisher(js)
	bad := map[string]*streams.Envelope{}
	for name, mut := range map[string]func(*streams.Envelope){
		"unknown app":      func(e *streams.Envelope) { e.App = "cursor" },
		"id with a dot":    func(e *streams.Envelope) { e.ID = "a.b" },
		"session wildcard": func(e *streams.Envelope) { e.SessionID = "*" },
		"version 2":        func(e *streams.Envelope) { e.V = 2 },
	} {
		e := decodeFixture(t, streams.TypeSessionStart)
		mut(e)
		bad[name] = e
	}
	for name, e := range bad {
		if _, err := pub.Publish(t.Context(), e, nil); !errors.Is(err, streams.ErrRejected) {
			t.Errorf("%s: Publish = %v, want a rejection", name, err)
		}
		if _, err := pub.PublishAsync(e, nil); !errors.Is(err, streams.ErrRejected) {
			t.Errorf("%s: PublishAsync = %v, want a rejection", name, err)
		}
	}
	if n := streamMsgs(t, js, streams.StreamSessions); n != 0 {
		t.Fatalf("stream holds %d messages after refused publishes, want 0", n)
	}
}

func TestEnsureStreamsIsIdempotent(t *testing.T) {
	js := startJetStream(t) // the first call
	pub := streams.NewPublisher(js)
	if _, err := pub.Publish(t.Context(), decodeFixture(t, streams.TypeSessionChunk), nil); err != nil {
		t.Fatalf("Publish: %v", err)
	}
	if err := streams.EnsureStreams(t.Context(), js, 1); err != nil {
		t.Fatalf("second EnsureStreams: %v", err)
	}
	for _, want := range streams.StreamConfigs(1) {
		s, err := js.Stream(t.Context(), want.Name)
		if err != nil {
			t.Fatalf("stream %s: %v", want.Name, err)
		}
		info, err := s.Info(t.Context())
		if err != nil {
			t.Fatalf("stream %s info: %v", want.Name, err)
		}
		if !slices.Equal(info.Config.Subjects, want.Subjects) {
			t.Errorf("%s subjects %v, want %v", want.Name, info.Config.Subjects, want.Subjects)
		}
		if info.Config.Duplicates != streams.DuplicateWindow || info.Config.Storage != jetstream.FileStorage {
			t.Errorf("%s duplicates %v storage %v", want.Name, info.Config.Duplicates, info.Config.Storage)
		}
	}
	if n := streamMsgs(t, js, streams.StreamSessions); n != 1 {
		t.Fatalf("EnsureStreams lost messages: %d stored, want 1", n)
	}
}
