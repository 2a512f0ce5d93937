package streams_test

import (
	"context"
	"fmt"
	"strconv"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/spinehq/spine/internal/pgtest"
	"github.com/spinehq/spine/streams"
)

// boundedHandler stores each message's number in a table PostgreSQL checks:
// a number over 100 can never be written.
type boundedHandler struct{}

func (boundedHandler) Apply(ctx context.Context, tx pgx.Tx, msgs []streams.Message) ([]error, error) {
	for _, m := range msgs {
		n, _ := strconv.Atoi(string(m.Data))
		if _, err := tx.Exec(ctx, `INSERT INTO bounded (seq, n) VALUES ($1, $2)`, int64(m.Seq), n); err != nil {
			return nil, fmt.Errorf("insert %d: %w", m.Seq, err)
		}
	}
	return make([]error, len(msgs)), nil
}

// A message whose rows PostgreSQL refuses (a CHECK constraint) is found and
// dead-lettered as unstorable; the rest of its batch is applied, and the
// projector does not retry forever.
func TestUnstorableMessageIsDeadLettered(t *testing.T) {
	pool, _ := pgtest.New(t)
	ctx := context.Background()
	if _, err := pool.Exec(ctx, `CREATE TABLE bounded (seq bigint PRIMARY KEY, n int CHECK (n < 100))`); err != nil {
		t.Fatal(err)
	}
	emb, err := streams.StartEmbedded(streams.EmbeddedConfig{StoreDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer emb.Stop()
	nc, _ := emb.Connect()
	defer nc.Close()
	js := mustJS(t, nc)
	if err := streams.EnsureStreams(ctx, js, 1); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"1", "2", "500", "3", "700", "4"} {
		if _, err := js.Publish(ctx, "spine.session.x.chunk", []byte(n)); err != nil {
			t.Fatal(err)
		}
	}
	done := make(chan uint64, 16)
	p, err := streams.NewProjector(streams.ProjectorConfig{Name: "bounded", Stream: streams.StreamSessions,
		Handler: boundedHandler{}, Pool: pool, JS: js, BatchSize: 10,
		OnCommit: func(last uint64, _ []streams.Message) { done <- last }})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer p.Stop()
	for last := uint64(0); last < 6; last = <-done {
	}
	var stored, dead int
	pool.QueryRow(ctx, `SELECT count(*) FROM bounded`).Scan(&stored)
	pool.QueryRow(ctx, `SELECT count(*) FROM dead_letters WHERE reason = 'unstorable' AND detail LIKE '%23514%'`).Scan(&dead)
	if stored != 4 || dead != 2 {
		t.Fatalf("%d rows stored, %d unstorable dead letters; want 4 and 2", stored, dead)
	}
}

func TestReportedFiguresAreBounded(t *testing.T) {
	base := `{"v":1,"type":"session.end","id":"e1","at":"2026-11-01T00:00:00Z","sessionId":"s1","status":"done",`
	for name, tail := range map[string]string{
		"huge raw number":  `"usage":{"inputTokens":1,"raw":{"n":1e200000}}}`,
		"token overflow":   `"usage":{"inputTokens":9000000000000000000}}`,
		"tokens over 1e15": `"usage":{"outputTokens":1000000000000001}}`,
		"cost over 1e9":    `"totalCost":2e9}`,
	} {
		_, err := streams.Decode([]byte(base + tail))
		if rej, ok := streams.AsRejection(err); !ok || rej.Reason != streams.ReasonInvalidField {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, err := streams.Decode([]byte(base + `"usage":{"inputTokens":5,"raw":{"n":1.5e300,"s":"x"}},"totalCost":0.25}`)); err != nil {
		t.Fatalf("ordinary figures refused: %v", err)
	}
}
