package streams_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/spinehq/spine/streams"
)

// refusingHandler projects into seen like seenHandler, except for three
// messages it can never apply: "wide" writes a name past the btree's row
// size limit (SQLSTATE 54000, not a data or constraint class), "fail"
// makes the handler return an error of its own for the batch, and "boom"
// makes it panic.
type refusingHandler struct{ seen *seenHandler }

func (h refusingHandler) Apply(ctx context.Context, tx pgx.Tx, msgs []streams.Message) ([]error, error) {
	var rest []streams.Message
	for _, m := range msgs {
		switch string(m.Data) {
		case "wide": // md5 hex does not compress: 3,200 bytes reach the index as they are
			_, err := tx.Exec(ctx, `INSERT INTO named (seq, name)
				SELECT $1, string_agg(md5(i::text), '') FROM generate_series(1, 100) i`, int64(m.Seq))
			if err != nil {
				return nil, fmt.Errorf("insert name %d: %w", m.Seq, err)
			}
		case "fail":
			return nil, fmt.Errorf("message %d: the handler cannot apply it", m.Seq)
		case "boom":
			var missing map[string]*int
			_ = *missing["x"] // a nil dereference, as a handler bug would
		default:
			rest = append(rest, m)
		}
	}
	return h.seen.Apply(ctx, tx, rest)
}

func deadLetters(t *testing.T, r *rig) map[uint64][2]string {
	t.Helper()
	rows, err := r.conn().Query(t.Context(), `SELECT seq, reason, detail FROM dead_letters`)
	if err != nil {
		t.Fatalf("read dead_letters: %v", err)
	}
	out := map[uint64][2]string{}
	for rows.Next() {
		var seq int64
		var reason, detail string
		if err := rows.Scan(&seq, &reason, &detail); err != nil {
			t.Fatal(err)
		}
		out[uint64(seq)] = [2]string{reason, detail}
	}
	return out
}

// A message whose rows PostgreSQL refuses with a SQLSTATE outside the data
// and constraint classes, one the handler fails on with an error of its
// own, and one it panics on, are each isolated and dead-lettered with the
// error; the rest of their batches and everything after them is projected.
func TestMessagesThatKeepFailingAreIsolated(t *testing.T) {
	r := newRig(t)
	if _, err := r.pool.Exec(t.Context(), `CREATE TABLE named (seq bigint PRIMARY KEY, name text NOT NULL UNIQUE)`); err != nil {
		t.Fatal(err)
	}
	seqs := r.publish("m-0", "wide", "m-2", "m-3", "fail", "m-5", "m-6", "m-7")
	wide, fail := seqs[1], seqs[4]
	p := r.start(func(c *streams.ProjectorConfig) { c.Handler = refusingHandler{r.handler} })
	r.waitCommitted(seqs[len(seqs)-1])
	later := r.publish("m-8", "boom", "m-10")
	r.waitCommitted(later[len(later)-1])

	boom := later[1]
	r.wantSeen(without(append(seqs, later...), wide, fail, boom))
	dead := deadLetters(t, r)
	if len(dead) != 3 {
		t.Fatalf("dead letters %v, want %d, %d and %d", dead, wide, fail, boom)
	}
	if d := dead[wide]; d[0] != streams.ReasonUnstorable || !strings.Contains(d[1], "SQLSTATE 54000") ||
		!strings.Contains(d[1], "index row size") {
		t.Errorf("dead letter of the wide name: %q", d)
	}
	if d := dead[fail]; d[0] != streams.ReasonHandlerError || !strings.Contains(d[1], "the handler cannot apply it") {
		t.Errorf("dead letter of the failing message: %q", d)
	}
	if d := dead[boom]; d[0] != streams.ReasonHandlerError || !strings.Contains(d[1], "handler panicked: runtime error") {
		t.Errorf("dead letter of the message the handler panics on: %q", d)
	}
	if n := streamMsgs(t, r.js, streams.StreamDLQ); n != 3 {
		t.Errorf("SPINE_DLQ holds %d messages, want 3", n)
	}
	if got := r.metric("spine_projector_isolated_total"); got != 3 {
		t.Errorf("isolated metric %v, want 3", got)
	}
	if err := p.Health(); err != nil || r.metric("spine_projector_consecutive_failures") != 0 {
		t.Errorf("after isolating: health %v, %v failures in a row", err, r.metric("spine_projector_consecutive_failures"))
	}
}

// Failures of the connection or of the server's availability are retried,
// however often they repeat, and never isolate a message: a lock another
// session holds (55P03, more times than isolation would allow) and the
// projector's own backend terminated twice.
func TestTransientFailuresAreRetriedNotIsolated(t *testing.T) {
	r := newRig(t)
	ctx := t.Context()
	if _, err := r.pool.Exec(ctx, `CREATE TABLE held (x int)`); err != nil {
		t.Fatal(err)
	}
	holder, err := r.conn().Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Rollback(context.Background())
	if _, err := holder.Exec(ctx, `LOCK TABLE held IN ACCESS EXCLUSIVE MODE`); err != nil {
		t.Fatal(err)
	}
	var locked, terminated atomic.Int64
	locked.Store(streams.DefaultIsolateAfter + 2)
	terminated.Store(2)
	seqs := r.publish("m-0", "locked", "m-2", "terminated", "m-4")
	r.start(func(c *streams.ProjectorConfig) {
		c.Handler = transientHandler{seen: r.handler, locked: &locked, terminated: &terminated}
	})
	r.waitCommitted(seqs[len(seqs)-1])

	r.wantSeen(seqs)
	if dead := deadLetters(t, r); len(dead) != 0 {
		t.Fatalf("transient failures dead-lettered %v", dead)
	}
	if locked.Load() >= 0 || terminated.Load() >= 0 {
		t.Fatalf("failures left unused: %d locks, %d terminations", locked.Load(), terminated.Load())
	}
	if got := r.metric("spine_projector_isolated_total"); got != 0 {
		t.Errorf("isolated metric %v, want 0", got)
	}
	if got := r.metric("spine_projector_retries_total"); got < streams.DefaultIsolateAfter+4 {
		t.Errorf("retries metric %v, want at least %d", got, streams.DefaultIsolateAfter+4)
	}
}

// transientHandler fails the way a database in trouble does: "locked"
// takes a lock another session holds (NOWAIT: 55P03 at once) while locked
// is positive, "terminated" ends its own backend while terminated is.
type transientHandler struct {
	seen               *seenHandler
	locked, terminated *atomic.Int64
}

func (h transientHandler) Apply(ctx context.Context, tx pgx.Tx, msgs []streams.Message) ([]error, error) {
	for _, m := range msgs {
		var err error
		switch {
		case bytes.Equal(m.Data, []byte("locked")) && h.locked.Add(-1) >= 0:
			_, err = tx.Exec(ctx, `LOCK TABLE held IN ACCESS EXCLUSIVE MODE NOWAIT`)
		case bytes.Equal(m.Data, []byte("terminated")) && h.terminated.Add(-1) >= 0:
			_, err = tx.Exec(ctx, `SELECT pg_terminate_backend(pg_backend_pid())`)
		}
		if err != nil {
			return nil, fmt.Errorf("message %d: %w", m.Seq, err)
		}
	}
	return h.seen.Apply(ctx, tx, msgs)
}

// A projector blocked by a lock held elsewhere shows it: Health names it
// with the SQLSTATE once it has failed StuckAfter times in a row, the lag
// is what it has not applied (for a filtered consumer too), and both clear
// when it catches up.
func TestStuckProjectorIsVisible(t *testing.T) {
	for name, filter := range map[string][]string{"whole stream": nil, "filtered": {"spine.session.>"}} {
		t.Run(name, func(t *testing.T) { testStuckProjectorIsVisible(t, filter) })
	}
}

func testStuckProjectorIsVisible(t *testing.T, filter []string) {
	r := newRig(t)
	ctx := t.Context()
	holder, err := r.conn().Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Rollback(context.Background())
	if _, err := holder.Exec(ctx, `LOCK TABLE seen IN ACCESS EXCLUSIVE MODE`); err != nil {
		t.Fatal(err)
	}
	const stuckAfter = 2
	third := make(chan struct{})
	r.handler.beforeApply = func(call int64, _ []streams.Message) {
		if call == stuckAfter+1 { // the failures before it are counted
			close(third)
		}
	}
	seqs := r.publishN(6)
	p := r.start(func(c *streams.ProjectorConfig) {
		c.Filter, c.StuckAfter, c.LockTimeout = filter, stuckAfter, 20*time.Millisecond
	})
	select {
	case <-third:
	case <-time.After(waitTimeout):
		t.Fatal("the projector never retried")
	}
	var stuck *streams.StuckError
	if err := p.Health(); !errors.As(err, &stuck) || !errors.Is(err, streams.ErrCannotAdvance) ||
		stuck.Projector != projectorName || stuck.Attempts < stuckAfter || stuck.Failure != "SQLSTATE 55P03 lock_not_available" ||
		!strings.Contains(err.Error(), projectorName) {
		t.Fatalf("health of a blocked projector: %v", err)
	}
	if lag := r.metric("spine_projector_lag"); lag != float64(len(seqs)) {
		t.Errorf("lag %v while nothing is applied, want %d", lag, len(seqs))
	}
	if err := holder.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	r.waitCommitted(seqs[len(seqs)-1])
	r.wantSeen(seqs)
	if err := p.Health(); err != nil {
		t.Errorf("health after catching up: %v", err)
	}
	// The lag is measured just after each commit, without holding the
	// commit up: wait for that measurement.
	deadline := time.Now().Add(waitTimeout)
	for {
		lag, n := r.metric("spine_projector_lag"), r.metric("spine_projector_consecutive_failures")
		if lag == 0 && n == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after catching up: lag %v, %v failures in a row", lag, n)
		}
		time.Sleep(10 * time.Millisecond) // the measurement signals nothing a test can wait on
	}
}

// A dead letter larger than the DLQ copy may be (2.4 MiB of invalid UTF-8,
// which redaction once grew past the server's max payload) is kept whole
// in dead_letters and published cut to DLQMaxBytes with Spine-Truncated;
// the projector goes on past it.
func TestLargeDeadLetterIsTruncatedOnTheDLQ(t *testing.T) {
	r := newRig(t)
	big := "bad" + strings.Repeat("\xffA", 1200<<10)
	seqs := r.publish("m-0", big, "m-2")
	r.start(nil)
	r.waitCommitted(seqs[2])
	r.wantSeen([]uint64{seqs[0], seqs[2]})

	var stored int
	if err := r.conn().QueryRow(t.Context(), `SELECT length(data) FROM dead_letters WHERE seq = $1`,
		int64(seqs[1])).Scan(&stored); err != nil {
		t.Fatalf("read the dead letter: %v", err)
	}
	if stored != len(big) {
		t.Errorf("dead_letters keeps %d bytes of a %d-byte message", stored, len(big))
	}
	dlq, err := r.js.Stream(t.Context(), streams.StreamDLQ)
	if err != nil {
		t.Fatal(err)
	}
	msg, err := dlq.GetMsg(t.Context(), 1)
	if err != nil {
		t.Fatalf("read the DLQ: %v", err)
	}
	if len(msg.Data) > streams.DLQMaxBytes || msg.Header.Get(streams.HeaderTruncated) != strconv.Itoa(len(big)) ||
		!bytes.HasPrefix([]byte(big), msg.Data) {
		t.Errorf("DLQ copy: %d bytes, %s %q", len(msg.Data), streams.HeaderTruncated, msg.Header.Get(streams.HeaderTruncated))
	}
}

// When even the dead letter cannot be written (here a trigger refuses any
// row that keeps the message), the message is dead-lettered without its
// data rather than retried for ever.
func TestUnwritableDeadLetterIsRecordedBare(t *testing.T) {
	r := newRig(t)
	if _, err := r.pool.Exec(t.Context(), `CREATE FUNCTION refuse_data() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN IF length(NEW.data) > 0 THEN RAISE EXCEPTION 'no data here'; END IF; RETURN NEW; END $$;
		CREATE TRIGGER refuse_data BEFORE INSERT ON dead_letters FOR EACH ROW EXECUTE FUNCTION refuse_data()`); err != nil {
		t.Fatal(err)
	}
	seqs := r.publish("m-0", "bad-1", "m-2")
	p := r.start(nil)
	r.waitCommitted(seqs[2])
	r.wantSeen([]uint64{seqs[0], seqs[2]})
	dead := deadLetters(t, r)
	if d := dead[seqs[1]]; len(dead) != 1 || !strings.Contains(d[1], "could not be kept") || !strings.Contains(d[1], "P0001") {
		t.Fatalf("dead letters %v, want one for %d without its message", dead, seqs[1])
	}
	if err := p.Health(); err != nil {
		t.Errorf("health after recording it bare: %v", err)
	}
}

// Only the resource and corruption codes that are the server's are retried
// without end; their classes' other codes may be one message's.
func TestResourceAndInternalCodesAreNarrow(t *testing.T) {
	for code, want := range map[string]bool{"53100": true, "53200": true, "53300": true, "53400": false,
		"XX001": true, "XX002": true, "XX000": false, "57014": true, "54000": false} {
		if got := streams.IsTransient(&pgconn.PgError{Code: code}); got != want {
			t.Errorf("IsTransient(SQLSTATE %s) = %v, want %v", code, got, want)
		}
	}
}

// A statement_timeout set for the database does not reach the projector's
// connection: a message that is always slower to apply than it is applied,
// not cancelled (57014) and retried for ever.
func TestStatementTimeoutDoesNotBindTheProjector(t *testing.T) {
	r := newRig(t)
	if _, err := r.pool.Exec(t.Context(), `DO $$ BEGIN
		EXECUTE format('ALTER DATABASE %I SET statement_timeout = 50', current_database()); END $$`); err != nil {
		t.Fatal(err)
	}
	pool, err := pgxpool.New(t.Context(), r.url) // new connections, which take the setting
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	var timeout string
	if err := pool.QueryRow(t.Context(), `SHOW statement_timeout`).Scan(&timeout); err != nil || timeout != "50ms" {
		t.Fatalf("statement_timeout %q (%v), want 50ms", timeout, err)
	}
	seqs := r.publish("m-0", "slow", "m-2")
	r.start(func(c *streams.ProjectorConfig) { c.Pool, c.Handler = pool, slowHandler{r.handler} })
	r.waitCommitted(seqs[2])
	r.wantSeen(seqs)
}

// slowHandler sleeps 200 ms in the database for a message "slow".
type slowHandler struct{ seen *seenHandler }

func (h slowHandler) Apply(ctx context.Context, tx pgx.Tx, msgs []streams.Message) ([]error, error) {
	for _, m := range msgs {
		if string(m.Data) == "slow" {
			if _, err := tx.Exec(ctx, `SELECT pg_sleep(0.2)`); err != nil {
				return nil, fmt.Errorf("message %d: %w", m.Seq, err)
			}
		}
	}
	return h.seen.Apply(ctx, tx, msgs)
}

// waitHealth waits until Health answers what ok accepts.
func waitHealth(t *testing.T, p *streams.Projector, ok func(error) bool) error {
	t.Helper()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	timeout := time.After(waitTimeout)
	for {
		err := p.Health()
		if ok(err) {
			return err
		}
		select {
		case <-tick.C:
		case <-timeout:
			t.Fatalf("health still %v after %v", err, waitTimeout)
		}
	}
}

// A projector that cannot start consuming (its checkpoint table is gone)
// counts each attempt and shows as stuck in Health; once the table is
// back it consumes, and Health clears with nothing to apply.
func TestProjectorThatCannotStartIsVisible(t *testing.T) {
	r := newRig(t)
	if _, err := r.pool.Exec(t.Context(), `ALTER TABLE projector_checkpoints RENAME TO hidden`); err != nil {
		t.Fatal(err)
	}
	p := r.start(func(c *streams.ProjectorConfig) { c.StuckAfter = 2 })
	err := waitHealth(t, p, func(err error) bool { return err != nil })
	var stuck *streams.StuckError
	if !errors.As(err, &stuck) || stuck.Failure != "reading the checkpoint: SQLSTATE 42P01 undefined_table" {
		t.Fatalf("health of a projector without its checkpoint table: %v", err)
	}
	if n := r.metric("spine_projector_consecutive_failures"); n < 2 {
		t.Errorf("%v failures in a row, want at least 2", n)
	}
	if _, err := r.pool.Exec(t.Context(), `ALTER TABLE hidden RENAME TO projector_checkpoints`); err != nil {
		t.Fatal(err)
	}
	waitHealth(t, p, func(err error) bool { return err == nil })
	seqs := r.publishN(2)
	r.waitCommitted(seqs[1])
}
