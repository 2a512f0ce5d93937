package streams_test

import (
	"context"
	"errors"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/spinehq/spine/internal/pgtest"
	"github.com/spinehq/spine/streams"
)

// A database projected from another log (another data directory) is
// refused at startup instead of silently skipping messages.
func TestForeignLogIsRefused(t *testing.T) {
	pool, _ := pgtest.New(t)
	emb, err := streams.StartEmbedded(streams.EmbeddedConfig{StoreDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer emb.Stop()
	nc, _ := emb.Connect()
	defer nc.Close()
	js := mustJS(t, nc)
	if err := streams.EnsureStreams(context.Background(), js, 1); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(context.Background(), `INSERT INTO projector_checkpoints VALUES ('recorder', 57)`); err != nil {
		t.Fatal(err)
	}
	p, err := streams.NewProjector(streams.ProjectorConfig{Name: "recorder", Stream: streams.StreamSessions,
		Handler: nopHandler{}, Pool: pool, JS: js})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Preflight(context.Background()); !errors.Is(err, streams.ErrForeignLog) {
		t.Fatalf("preflight = %v", err)
	}
	if err := p.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := p.Wait(); !errors.Is(err, streams.ErrForeignLog) {
		t.Fatalf("projector ended with %v", err)
	}
}

func mustJS(t *testing.T, nc *nats.Conn) jetstream.JetStream {
	t.Helper()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return js
}

type nopHandler struct{}

func (nopHandler) Apply(_ context.Context, _ pgx.Tx, msgs []streams.Message) ([]error, error) {
	return make([]error, len(msgs)), nil
}
