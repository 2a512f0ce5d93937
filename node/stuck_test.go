package node_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/spinehq/spine/internal/spinetest"
	"github.com/spinehq/spine/node"
	"github.com/spinehq/spine/streams"
)

// publishRaw stores bytes on the log as they are, as a producer that skips
// streams.Publisher's validation could, and returns their sequence.
func publishRaw(t *testing.T, n *node.Node, subject, data string) uint64 {
	t.Helper()
	ack, err := n.JS.Publish(t.Context(), subject, []byte(data))
	if err != nil {
		t.Fatal(err)
	}
	return ack.Sequence
}

// publishSession publishes a start and an end of session id through the
// Publisher, with end's extra fields, and returns the end's sequence.
func publishSession(t *testing.T, n *node.Node, id, endFields string) uint64 {
	t.Helper()
	var last uint64
	for _, raw := range []string{
		`{"v":1,"type":"session.start","id":"` + id + `-start","at":"2026-11-02T09:00:00Z","sessionId":"` + id +
			`","app":"claude-code","kind":"run","owner":{"org":"acme","member":"alice"},"workerId":"w1"}`,
		`{"v":1,"type":"session.end","id":"` + id + `-end","at":"2026-11-02T09:30:00Z","sessionId":"` + id +
			`","status":"done","billing":"metered","door":"session"` + endFields + `}`,
	} {
		e, err := streams.Decode([]byte(raw))
		if err != nil {
			t.Fatalf("decode %s: %v", raw, err)
		}
		ack, err := n.Publisher.Publish(t.Context(), e, nil)
		if err != nil {
			t.Fatal(err)
		}
		last = ack.Sequence
	}
	return last
}

// incompressible is n hex characters PostgreSQL cannot compress.
func incompressible(n int) string {
	var b strings.Builder
	sum := sha256.Sum256([]byte("seed"))
	for b.Len() < n {
		b.WriteString(hex.EncodeToString(sum[:]))
		sum = sha256.Sum256(sum[:])
	}
	return b.String()[:n]
}

// One oversized envelope cannot stop accounting, through a whole node: a
// session.end whose model is 3,000 characters, published straight to the
// log. Whether the door's
// bounds refuse it on decoding (field_too_long) or it reaches PostgreSQL and
// makes a cost_days key over the btree's limit (unstorable, SQLSTATE 54000,
// isolated), it is dead-lettered, and the next session gets its router-call
// row: accounting goes on.
func TestOversizedModelDoesNotStopAccounting(t *testing.T) {
	f := newFixture(t)
	publishRaw(t, f.n, "spine.session.huge.start", `{"v":1,"type":"session.start","id":"huge-start",`+
		`"at":"2026-11-02T09:00:00Z","sessionId":"huge","app":"claude-code","kind":"run","owner":{"org":"acme","member":"alice"}}`)
	bad := publishRaw(t, f.n, "spine.session.huge.end", `{"v":1,"type":"session.end","id":"huge-end","at":"2026-11-02T09:30:00Z",`+
		`"sessionId":"huge","status":"done","billing":"metered","door":"session","model":"`+incompressible(3000)+`"}`)
	publishSession(t, f.n, "after", `,"model":"claude-sonnet-4-5"`)
	f.waitCaughtUp()

	ctx := t.Context()
	var calls int
	if err := f.n.Pool.QueryRow(ctx, `SELECT count(*) FROM router_calls WHERE session_id = 'after'`).Scan(&calls); err != nil || calls != 1 {
		t.Fatalf("the session after the bad one has %d router-call rows (%v), want 1", calls, err)
	}
	var reason, detail string
	err := f.n.Pool.QueryRow(ctx, `SELECT reason, detail FROM dead_letters WHERE stream = $1 AND seq = $2`,
		streams.StreamSessions, int64(bad)).Scan(&reason, &detail)
	isolated := reason == streams.ReasonUnstorable && strings.Contains(detail, "SQLSTATE 54000") && strings.Contains(detail, "cost_days_pkey")
	t.Logf("dead letter: %s: %s", reason, detail)
	if err != nil || !isolated && reason != "field_too_long" {
		t.Fatalf("dead letter of the oversized end: %q %q (%v)", reason, detail, err)
	}
	for _, p := range f.n.Projectors() {
		if err := p.Health(); err != nil {
			t.Errorf("after the oversized end: %v", err)
		}
	}
}

// The same failure through the accounting projector, now that the door
// bounds the model: an index the test adds on cost_days turns a model
// named wide-… into a 3,200-byte key, over the btree's limit, as the red
// team's 3,000-character model did to cost_days_pkey. The end is isolated
// and dead-lettered with the SQLSTATE; the next session gets its row.
func TestIndexRowTooBigIsIsolated(t *testing.T) {
	f := newCostFixture(t)
	ctx := t.Context()
	if _, err := f.n.Pool.Exec(ctx, `CREATE FUNCTION widen(m text) RETURNS text IMMUTABLE LANGUAGE sql
		AS $$ SELECT CASE WHEN m LIKE 'wide-%' THEN (SELECT string_agg(md5(m || i), '') FROM generate_series(1, 100) i) ELSE m END $$;
		CREATE INDEX cost_days_wide ON cost_days (widen(served_model))`); err != nil {
		t.Fatal(err)
	}
	bad := publishSession(t, f.n, "wide", `,"model":"wide-model"`)
	good := publishSession(t, f.n, "after", `,"model":"claude-sonnet-4-5"`)
	f.waitFor(good)

	var calls int
	if err := f.n.Pool.QueryRow(ctx, `SELECT count(*) FROM router_calls WHERE session_id = 'after'`).Scan(&calls); err != nil || calls != 1 {
		t.Fatalf("the session after the bad one has %d router-call rows (%v), want 1", calls, err)
	}
	var reason, detail string
	err := f.n.Pool.QueryRow(ctx, `SELECT reason, detail FROM dead_letters WHERE stream = $1 AND seq = $2`,
		streams.StreamSessions, int64(bad)).Scan(&reason, &detail)
	if err != nil || reason != streams.ReasonUnstorable || !strings.Contains(detail, "SQLSTATE 54000") ||
		!strings.Contains(detail, "index row size") || !strings.Contains(detail, "cost_days_wide") {
		t.Fatalf("dead letter of the end with the wide model: %q %q (%v)", reason, detail, err)
	}
	if err := f.acct.Health(); err != nil {
		t.Fatalf("accounting after isolating: %v", err)
	}
}

// failSignal wraps a handler and closes reached when an attempt begins
// after at failed ones: the projector has counted them by then.
type failSignal struct {
	streams.Handler
	at      int64
	failed  atomic.Int64
	once    sync.Once
	reached chan struct{}
}

func (h *failSignal) Apply(ctx context.Context, tx pgx.Tx, msgs []streams.Message) ([]error, error) {
	if h.failed.Load() >= h.at {
		h.once.Do(func() { close(h.reached) })
	}
	res, err := h.Handler.Apply(ctx, tx, msgs)
	if err != nil {
		h.failed.Add(1)
	}
	return res, err
}

var lagLine = regexp.MustCompile(`(?m)^spine_projector_lag\{projector="accounting"\} (\S+)$`)

// A projector that cannot advance (another session holds a lock on
// router_calls) is named by /readyz with what fails, and its lag counts
// what it has not applied; both clear once the lock goes.
func TestReadyzNamesAStuckProjector(t *testing.T) {
	signal := &failSignal{at: 2, reached: make(chan struct{})}
	f := newCostFixtureWith(t, func(c *streams.ProjectorConfig) {
		signal.Handler = c.Handler
		c.Handler, c.StuckAfter, c.LockTimeout = signal, int(signal.at), 20*time.Millisecond
	})
	ctx := t.Context()
	holder, err := pgx.Connect(ctx, f.cfg.DatabaseURL)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close(context.Background())
	if _, err := holder.Exec(ctx, `BEGIN; LOCK TABLE router_calls IN ACCESS EXCLUSIVE MODE`); err != nil {
		t.Fatal(err)
	}
	last := publishSession(t, f.n, "s1", `,"model":"claude-sonnet-4-5"`)
	select {
	case <-signal.reached:
	case <-time.After(spinetest.WaitTimeout):
		t.Fatal("accounting never failed on the lock")
	}
	code, body := f.do("GET", "/readyz", "", nil)
	if code != 503 || !bytes.Contains(body, []byte(`"code":"unavailable"`)) ||
		!bytes.Contains(body, []byte("projector accounting cannot advance")) || !bytes.Contains(body, []byte("SQLSTATE 55P03")) {
		t.Fatalf("/readyz with accounting stuck = %d %s", code, body)
	}
	if lag := metricLag(t, f); lag <= 0 {
		t.Fatalf("lag %v while accounting is stuck", lag)
	}
	if _, err := holder.Exec(ctx, `ROLLBACK`); err != nil {
		t.Fatal(err)
	}
	f.waitFor(last)
	if code, body := f.do("GET", "/readyz", "", nil); code != 200 {
		t.Fatalf("/readyz after accounting caught up = %d %s", code, body)
	}
	// The lag is measured just after each commit, without holding the
	// commit up: wait for that measurement.
	deadline := time.Now().Add(spinetest.WaitTimeout)
	for lag := metricLag(t, f); lag != 0; lag = metricLag(t, f) {
		if time.Now().After(deadline) {
			t.Fatalf("lag %v after accounting caught up", lag)
		}
		time.Sleep(10 * time.Millisecond) // the measurement signals nothing a test can wait on
	}
}

func metricLag(t *testing.T, f *costFixture) float64 {
	t.Helper()
	_, body := f.do("GET", "/metrics", "", nil)
	m := lagLine.FindSubmatch(body)
	if m == nil {
		t.Fatalf("/metrics has no accounting lag:\n%s", body)
	}
	v, err := strconv.ParseFloat(string(m[1]), 64)
	if err != nil {
		t.Fatal(fmt.Errorf("lag %q: %w", m[1], err))
	}
	return v
}
