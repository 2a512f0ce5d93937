package streams_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/spinehq/spine/streams"
)

// waitTimeout bounds every wait on a signal. It is generous: it only ends
// a test that would otherwise hang, it never measures anything.
const waitTimeout = 60 * time.Second

// startJetStream runs an in-process nats-server for the test, with spine's
// streams created.
func startJetStream(t *testing.T) jetstream.JetStream {
	t.Helper()
	emb, err := streams.StartEmbedded(streams.EmbeddedConfig{StoreDir: t.TempDir()})
	if err != nil {
		t.Fatalf("StartEmbedded: %v", err)
	}
	t.Cleanup(emb.Stop)
	nc, err := emb.Connect()
	if err != nil {
		t.Fatalf("Connect: %v", err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatalf("jetstream.New: %v", err)
	}
	if err := streams.EnsureStreams(t.Context(), js, 1); err != nil {
		t.Fatalf("EnsureStreams: %v", err)
	}
	return js
}

func streamMsgs(t *testing.T, js jetstream.JetStream, name string) uint64 {
	t.Helper()
	s, err := js.Stream(t.Context(), name)
	if err != nil {
		t.Fatalf("stream %s: %v", name, err)
	}
	info, err := s.Info(t.Context())
	if err != nil {
		t.Fatalf("stream %s info: %v", name, err)
	}
	return info.State.Msgs
}

func waitCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), waitTimeout)
	t.Cleanup(cancel)
	return ctx
}
