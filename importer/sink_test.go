package importer

import (
	"context"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/spinehq/spine/streams"
)

// jetStream is an in-process JetStream with spine's streams and nothing
// else: the log the JetStream sink reads and writes.
func jetStream(t *testing.T) jetstream.JetStream {
	t.Helper()
	emb, err := streams.StartEmbedded(streams.EmbeddedConfig{StoreDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(emb.Stop)
	nc, err := emb.Connect()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	if err := streams.EnsureStreams(context.Background(), js, 1); err != nil {
		t.Fatal(err)
	}
	return js
}

func streamMsgs(t *testing.T, js jetstream.JetStream) uint64 {
	t.Helper()
	st, err := js.Stream(context.Background(), streams.StreamSessions)
	if err != nil {
		t.Fatal(err)
	}
	info, err := st.Info(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return info.State.Msgs
}

// The JetStream sink lists the recorded sessions once: an import cut short
// resumes after the last envelope the log holds (no duplicate reaches
// JetStream), and a re-import publishes nothing.
func TestJetStreamSinkResumesAndReimports(t *testing.T) {
	all := &memSink{}
	run(t, all, Options{}, fixtures(t))
	js := jetStream(t)
	const cut = 5 // a start and the first chunks: an import that stopped there
	pub := streams.NewPublisher(js)
	for _, e := range all.envs[:cut] {
		if _, err := pub.Publish(context.Background(), e, nil); err != nil {
			t.Fatal(err)
		}
	}
	sink, err := NewJetStreamSink(context.Background(), js)
	if err != nil {
		t.Fatal(err)
	}
	sum := run(t, sink, Options{}, fixtures(t))
	if sum.Envelopes != len(all.envs)-cut || sum.Duplicates != 0 || len(sum.Refused) != 0 ||
		streamMsgs(t, js) != uint64(len(all.envs)) {
		t.Fatalf("resumed import published %d of %d envelopes (%d duplicates, %d refused); stream holds %d",
			sum.Envelopes, len(all.envs)-cut, sum.Duplicates, len(sum.Refused), streamMsgs(t, js))
	}
	sink, err = NewJetStreamSink(context.Background(), js)
	if err != nil {
		t.Fatal(err)
	}
	again := run(t, sink, Options{}, fixtures(t))
	if again.Envelopes != 0 || again.Sessions != 0 || again.AlreadyRecorded != len(again.PerSession) ||
		streamMsgs(t, js) != uint64(len(all.envs)) {
		t.Fatalf("re-import published %d envelopes: %+v", again.Envelopes, again)
	}
}
