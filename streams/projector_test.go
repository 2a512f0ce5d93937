package streams_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/spinehq/spine/internal/pgtest"
	"github.com/spinehq/spine/streams"
)

const projectorName = "seen"

// seenHandler projects each message into the table seen, one row per
// stream sequence. The primary key turns a message applied twice into a
// test failure. Data starting with "bad" is rejected, "oops" fails with a
// plain per-message error, "odd" is rejected with a malformed reason.
type seenHandler struct {
	t *testing.T
	// failures is how many more calls to Apply fail as the database would.
	failures atomic.Int64
	calls    atomic.Int64
	inserted atomic.Int64 // rows inserted, by transactions that may later roll back
	// beforeApply, if set, runs at the start of every call with its number
	// (from 1) and the messages.
	beforeApply func(call int64, msgs []streams.Message)
	// onFail, if set, runs in each failing call with the number of the failure.
	onFail func(n int64)
	nfail  atomic.Int64
	// dup is closed the first time a message is applied twice, so waits
	// fail at once instead of timing out on a batch retried forever.
	dup     chan struct{}
	dupOnce sync.Once
}

var errInjected = errors.New("injected database failure")

func (h *seenHandler) Apply(ctx context.Context, tx pgx.Tx, msgs []streams.Message) ([]error, error) {
	call := h.calls.Add(1)
	if h.beforeApply != nil {
		h.beforeApply(call, msgs)
	}
	if h.failures.Add(-1) >= 0 {
		if n := h.nfail.Add(1); h.onFail != nil {
			h.onFail(n)
		}
		return nil, errInjected
	}
	results := make([]error, len(msgs))
	var seqs []int64
	var subjects []string
	for i, m := range msgs {
		switch {
		case bytes.HasPrefix(m.Data, []byte("bad")):
			results[i] = streams.Reject(streams.ReasonInvalidField, "message %d is bad", m.Seq)
		case bytes.HasPrefix(m.Data, []byte("oops")):
			results[i] = errors.New("the handler tripped")
		case bytes.HasPrefix(m.Data, []byte("odd")):
			results[i] = streams.Reject("not a.token", "a reason no subject can carry")
		default:
			seqs = append(seqs, int64(m.Seq))
			subjects = append(subjects, m.Subject)
		}
	}
	_, err := tx.Exec(ctx, `INSERT INTO seen (seq, subject) SELECT * FROM unnest($1::bigint[], $2::text[])`, seqs, subjects)
	if pgErr, ok := errors.AsType[*pgconn.PgError](err); ok && pgErr.Code == "23505" {
		h.dupOnce.Do(func() {
			h.t.Errorf("a message was applied twice: %s (batch %d..%d)", pgErr.Detail, msgs[0].Seq, msgs[len(msgs)-1].Seq)
			close(h.dup)
		})
	}
	if err != nil {
		return nil, fmt.Errorf("insert seen: %w", err)
	}
	h.inserted.Add(int64(len(seqs)))
	return results, nil
}

// commits turns OnCommit into a signal a test can wait on.
type commits struct {
	last atomic.Uint64
	ch   chan struct{}
}

func (c *commits) hook(last uint64, _ []streams.Message) {
	for {
		cur := c.last.Load()
		if last <= cur || c.last.CompareAndSwap(cur, last) {
			break
		}
	}
	select {
	case c.ch <- struct{}{}:
	default:
	}
}

// rig is one test's world: JetStream, a database with the seen table, and
// the projectors started on them.
type rig struct {
	t       *testing.T
	js      jetstream.JetStream
	pool    *pgxpool.Pool
	url     string
	commits *commits
	handler *seenHandler
	reg     *prometheus.Registry
	metrics *streams.Metrics
}

func newRig(t *testing.T) *rig {
	js := startJetStream(t)
	pool, url := pgtest.New(t)
	if _, err := pool.Exec(t.Context(), `CREATE TABLE seen (seq bigint PRIMARY KEY, subject text NOT NULL)`); err != nil {
		t.Fatalf("create seen: %v", err)
	}
	reg := prometheus.NewRegistry()
	return &rig{t: t, js: js, pool: pool, url: url, reg: reg, metrics: streams.NewMetrics(reg),
		commits: &commits{ch: make(chan struct{}, 1)}, handler: &seenHandler{t: t, dup: make(chan struct{})}}
}

// start starts a projector named projectorName; edit changes its config.
func (r *rig) start(edit func(*streams.ProjectorConfig)) *streams.Projector {
	r.t.Helper()
	cfg := streams.ProjectorConfig{Name: projectorName, Stream: streams.StreamSessions,
		Handler: r.handler, Pool: r.pool, JS: r.js, BatchSize: 4, Metrics: r.metrics, OnCommit: r.commits.hook}
	if edit != nil {
		edit(&cfg)
	}
	p, err := streams.NewProjector(cfg)
	if err != nil {
		r.t.Fatalf("NewProjector: %v", err)
	}
	if err := p.Start(waitCtx(r.t)); err != nil {
		r.t.Fatalf("Start: %v", err)
	}
	r.t.Cleanup(p.Stop)
	return p
}

// publish stores one message per data string and returns their sequences.
func (r *rig) publish(data ...string) []uint64 {
	r.t.Helper()
	seqs := make([]uint64, len(data))
	for i, d := range data {
		ack, err := r.js.Publish(r.t.Context(), "spine.session.s-"+strconv.Itoa(i%3)+".chunk", []byte(d))
		if err != nil {
			r.t.Fatalf("publish: %v", err)
		}
		seqs[i] = ack.Sequence
	}
	return seqs
}

func (r *rig) publishN(n int) []uint64 {
	data := make([]string, n)
	for i := range data {
		data[i] = "m-" + strconv.Itoa(i)
	}
	return r.publish(data...)
}

// waitCommitted waits until some projector has committed seq.
func (r *rig) waitCommitted(seq uint64) {
	r.t.Helper()
	timer := time.NewTimer(waitTimeout)
	defer timer.Stop()
	for r.commits.last.Load() < seq {
		select {
		case <-r.commits.ch:
		case <-r.handler.dup:
			r.t.Fatalf("waiting for sequence %d: a message was applied twice", seq)
		case <-timer.C:
			r.t.Fatalf("sequence %d not committed after %v (last commit %d)", seq, waitTimeout, r.commits.last.Load())
		}
	}
}

// conn opens a connection of its own, so a test can read while the
// projector's pool is being broken.
func (r *rig) conn() *pgx.Conn {
	r.t.Helper()
	c, err := pgx.Connect(r.t.Context(), r.url)
	if err != nil {
		r.t.Fatalf("connect: %v", err)
	}
	r.t.Cleanup(func() { c.Close(context.Background()) })
	return c
}

func (r *rig) seen() []uint64 {
	r.t.Helper()
	rows, err := r.conn().Query(r.t.Context(), `SELECT seq FROM seen ORDER BY seq`)
	if err != nil {
		r.t.Fatalf("read seen: %v", err)
	}
	seqs, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		r.t.Fatalf("read seen: %v", err)
	}
	out := make([]uint64, len(seqs))
	for i, s := range seqs {
		out[i] = uint64(s)
	}
	return out
}

func (r *rig) checkpoint() uint64 {
	r.t.Helper()
	var last int64
	err := r.conn().QueryRow(r.t.Context(), `SELECT last_seq FROM projector_checkpoints WHERE name = $1`, projectorName).Scan(&last)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0
	}
	if err != nil {
		r.t.Fatalf("read checkpoint: %v", err)
	}
	return uint64(last)
}

func (r *rig) wantSeen(want []uint64) {
	r.t.Helper()
	if got := r.seen(); !slices.Equal(got, want) {
		r.t.Fatalf("seen holds %d rows %v\nwant %d rows %v", len(got), got, len(want), want)
	}
}

func (r *rig) consumer() *jetstream.ConsumerInfo {
	r.t.Helper()
	c, err := r.js.Consumer(r.t.Context(), streams.StreamSessions, projectorName)
	if err != nil {
		r.t.Fatalf("consumer: %v", err)
	}
	info, err := c.Info(r.t.Context())
	if err != nil {
		r.t.Fatalf("consumer info: %v", err)
	}
	return info
}

// terminate ends every other connection to the test database, as a
// PostgreSQL restart or failover would.
func (r *rig) terminate() int {
	r.t.Helper()
	c, err := pgx.Connect(context.Background(), r.url)
	if err != nil {
		r.t.Errorf("connect to terminate: %v", err)
		return 0
	}
	defer c.Close(context.Background())
	var n int
	err = c.QueryRow(context.Background(), `SELECT count(pg_terminate_backend(pid)) FILTER (WHERE pg_terminate_backend(pid))
		FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()`).Scan(&n)
	if err != nil {
		r.t.Errorf("terminate backends: %v", err)
	}
	return n
}

func (r *rig) metric(name string) float64 {
	r.t.Helper()
	mfs, err := r.reg.Gather()
	if err != nil {
		r.t.Fatalf("gather: %v", err)
	}
	var sum float64
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			sum += m.GetCounter().GetValue() + m.GetGauge().GetValue()
		}
	}
	return sum
}

// wait waits for the projector to stop and returns Wait's error.
func wait(t *testing.T, p *streams.Projector) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- p.Wait() }()
	select {
	case err := <-done:
		return err
	case <-time.After(waitTimeout):
		t.Fatalf("projector still running after %v", waitTimeout)
		return nil
	}
}

// stop calls Stop and fails the test if it does not return.
func stop(t *testing.T, p *streams.Projector) {
	t.Helper()
	done := make(chan struct{})
	go func() { p.Stop(); close(done) }()
	select {
	case <-done:
	case <-time.After(waitTimeout):
		t.Fatalf("Stop did not return after %v", waitTimeout)
	}
}

func without(seqs []uint64, drop ...uint64) []uint64 {
	return slices.DeleteFunc(slices.Clone(seqs), func(s uint64) bool { return slices.Contains(drop, s) })
}

func TestNewProjectorValidates(t *testing.T) {
	js := startJetStream(t)
	pool, _ := pgtest.New(t)
	ok := streams.ProjectorConfig{Name: "p", Stream: streams.StreamSessions, Handler: &seenHandler{t: t}, Pool: pool, JS: js}
	if _, err := streams.NewProjector(ok); err != nil {
		t.Fatalf("NewProjector: %v", err)
	}
	for name, edit := range map[string]func(*streams.ProjectorConfig){
		"no name":    func(c *streams.ProjectorConfig) { c.Name = "" },
		"no stream":  func(c *streams.ProjectorConfig) { c.Stream = "" },
		"no handler": func(c *streams.ProjectorConfig) { c.Handler = nil },
		"no pool":    func(c *streams.ProjectorConfig) { c.Pool = nil },
		"no js":      func(c *streams.ProjectorConfig) { c.JS = nil },
	} {
		cfg := ok
		edit(&cfg)
		if _, err := streams.NewProjector(cfg); err == nil {
			t.Errorf("%s: NewProjector accepted it", name)
		}
	}
	cfg := ok
	cfg.Name = "a.b"
	if _, err := streams.NewProjector(cfg); !errors.Is(err, streams.ErrInvalidID) {
		t.Errorf("name a.b: %v, want ErrInvalidID", err)
	}
}

// TestProjectorAppliesAndDeadLetters: every message is applied once, bad
// ones are dead-lettered with their reason in the table and on SPINE_DLQ,
// and what follows them is applied all the same.
func TestProjectorAppliesAndDeadLetters(t *testing.T) {
	r := newRig(t)
	seqs := r.publish("m-1", "m-2", "bad token=hunter2", "m-4", "m-5", "m-6", "oops", "m-8", "bad", "m-10", "m-11")
	bad, oops := []uint64{seqs[2], seqs[8]}, seqs[6]
	p := r.start(func(c *streams.ProjectorConfig) {
		c.Redact = func(b []byte) []byte { return bytes.ReplaceAll(b, []byte("hunter2"), []byte("[redacted]")) }
	})
	last := seqs[len(seqs)-1]
	r.waitCommitted(last)

	r.wantSeen(without(seqs, append(bad, oops)...))
	if ck := r.checkpoint(); ck != last || p.Checkpoint() != last {
		t.Fatalf("checkpoint %d (projector says %d), want %d", ck, p.Checkpoint(), last)
	}

	type dead struct {
		Seq                  int64
		Stream, Subject, Why string
		Detail               string
		Data                 []byte
	}
	rows, err := r.conn().Query(t.Context(), `SELECT seq, stream, subject, reason, detail, data FROM dead_letters ORDER BY seq`)
	if err != nil {
		t.Fatalf("read dead_letters: %v", err)
	}
	letters, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (dead, error) {
		var d dead
		err := row.Scan(&d.Seq, &d.Stream, &d.Subject, &d.Why, &d.Detail, &d.Data)
		return d, err
	})
	if err != nil {
		t.Fatalf("read dead_letters: %v", err)
	}
	wantWhy := map[uint64]string{bad[0]: streams.ReasonInvalidField, oops: "handler_error", bad[1]: streams.ReasonInvalidField}
	if len(letters) != len(wantWhy) {
		t.Fatalf("dead_letters has %d rows %+v, want %d", len(letters), letters, len(wantWhy))
	}
	for _, d := range letters {
		if wantWhy[uint64(d.Seq)] != d.Why || d.Stream != streams.StreamSessions || d.Subject == "" || d.Detail == "" {
			t.Errorf("dead letter %+v", d)
		}
		if bytes.Contains(d.Data, []byte("hunter2")) {
			t.Errorf("dead letter %d stored unredacted: %q", d.Seq, d.Data)
		}
	}

	if n := streamMsgs(t, r.js, streams.StreamDLQ); n != uint64(len(wantWhy)) {
		t.Fatalf("SPINE_DLQ holds %d messages, want %d", n, len(wantWhy))
	}
	dlq, err := r.js.Stream(t.Context(), streams.StreamDLQ)
	if err != nil {
		t.Fatal(err)
	}
	for i := range uint64(len(wantWhy)) {
		m, err := dlq.GetMsg(t.Context(), i+1)
		if err != nil {
			t.Fatalf("DLQ message %d: %v", i+1, err)
		}
		seq, _ := strconv.ParseUint(m.Header.Get("Spine-Seq"), 10, 64)
		why := wantWhy[seq]
		if why == "" || m.Header.Get("Spine-Reason") != why || m.Subject != streams.DLQSubject(streams.StreamSessions, why) ||
			m.Header.Get("Spine-Stream") != streams.StreamSessions || m.Header.Get("Spine-Subject") == "" ||
			m.Header.Get("Spine-Detail") == "" {
			t.Errorf("DLQ message on %s with headers %v", m.Subject, m.Header)
		}
		if bytes.Contains(m.Data, []byte("hunter2")) {
			t.Errorf("DLQ message %d published unredacted: %q", seq, m.Data)
		}
	}

	if got := r.metric("spine_projector_dead_letters_total"); got != 3 {
		t.Errorf("dead letters metric %v, want 3", got)
	}
	if got := r.metric("spine_projector_messages_total"); got != float64(len(seqs)) {
		t.Errorf("messages metric %v, want %d", got, len(seqs))
	}
	if got := r.handler.inserted.Load(); got != int64(len(seqs)-3) {
		t.Errorf("handler inserted %d rows, want %d", got, len(seqs)-3)
	}
}

// TestProjectorDeadLettersMalformedReason: a rejection whose reason cannot
// be a subject token is still dead-lettered (as handler_error) instead of
// blocking the stream.
func TestProjectorDeadLettersMalformedReason(t *testing.T) {
	r := newRig(t)
	seqs := r.publish("m-1", "odd", "m-3")
	r.start(nil)
	r.waitCommitted(seqs[2])
	r.wantSeen([]uint64{seqs[0], seqs[2]})
	var reason, detail string
	if err := r.conn().QueryRow(t.Context(), `SELECT reason, detail FROM dead_letters WHERE seq = $1`, int64(seqs[1])).Scan(&reason, &detail); err != nil {
		t.Fatalf("read dead letter: %v", err)
	}
	if reason != "handler_error" {
		t.Fatalf("dead letter reason %q (%s), want handler_error", reason, detail)
	}
	if n := streamMsgs(t, r.js, streams.StreamDLQ); n != 1 {
		t.Fatalf("SPINE_DLQ holds %d messages, want 1", n)
	}
}

// TestProjectorCrashBetweenCommitAndAck: a batch committed but never
// acked is redelivered to the next projector, which must not apply it again.
func TestProjectorCrashBetweenCommitAndAck(t *testing.T) {
	r := newRig(t)
	seqs := r.publishN(12)
	var batches atomic.Int64
	p1 := r.start(func(c *streams.ProjectorConfig) {
		c.BatchSize = 3
		c.BeforeAck = func(uint64) error {
			if batches.Add(1) == 2 {
				return errors.New("simulated crash")
			}
			return nil
		}
	})
	if err := wait(t, p1); !errors.Is(err, streams.ErrStopped) {
		t.Fatalf("Wait = %v, want ErrStopped", err)
	}
	ck := r.checkpoint()
	if ck == 0 || ck != p1.Checkpoint() {
		t.Fatalf("checkpoint %d, projector says %d", ck, p1.Checkpoint())
	}
	r.wantSeen(seqs[:ck])
	if floor := r.consumer().AckFloor.Stream; floor >= ck {
		t.Fatalf("ack floor %d: the crashed batch ending at %d was acked", floor, ck)
	}

	r.start(nil) // a new process, same name
	r.waitCommitted(seqs[len(seqs)-1])
	r.wantSeen(seqs)
	if got := r.handler.inserted.Load(); got != int64(len(seqs)) {
		t.Fatalf("handler inserted %d rows for %d messages", got, len(seqs))
	}
}

// TestProjectorRetriesFailedBatch: a batch whose transaction fails is
// rolled back and retried, nothing is acked meanwhile, and it ends up
// applied exactly once.
func TestProjectorRetriesFailedBatch(t *testing.T) {
	const k = 3
	r := newRig(t)
	r.handler.failures.Store(k)
	atK, release := make(chan struct{}), make(chan struct{})
	r.handler.onFail = func(n int64) {
		if n == k {
			close(atK)
			<-release
		}
	}
	seqs := r.publishN(6)
	r.start(nil)
	select {
	case <-atK:
	case <-time.After(waitTimeout):
		t.Fatalf("handler failed %d times, never %d", r.handler.nfail.Load(), k)
	}
	// Inside the k-th failure: nothing committed, nothing acked.
	info := r.consumer()
	if info.AckFloor.Stream != 0 || info.NumAckPending == 0 {
		t.Errorf("during retries: ack floor %d, %d pending", info.AckFloor.Stream, info.NumAckPending)
	}
	if ck := r.checkpoint(); ck != 0 {
		t.Errorf("checkpoint %d during retries", ck)
	}
	r.wantSeen(nil)
	close(release)

	r.waitCommitted(seqs[len(seqs)-1])
	r.wantSeen(seqs)
	if got := r.handler.inserted.Load(); got != int64(len(seqs)) {
		t.Errorf("handler inserted %d rows for %d messages", got, len(seqs))
	}
	if got := r.metric("spine_projector_retries_total"); got != k {
		t.Errorf("retries metric %v, want %d", got, k)
	}
}

// TestProjectorSurvivesTerminatedConnections: PostgreSQL drops every
// connection, mid-transaction and between batches; the projection still
// ends complete and exactly once.
func TestProjectorSurvivesTerminatedConnections(t *testing.T) {
	r := newRig(t)
	var killed atomic.Int64
	r.handler.beforeApply = func(call int64, _ []streams.Message) {
		if call == 2 || call == 5 || call == 9 { // inside the batch's transaction
			killed.Add(int64(r.terminate()))
		}
	}
	first := r.publishN(40)
	r.start(func(c *streams.ProjectorConfig) { c.BatchSize = 5 })
	r.waitCommitted(first[len(first)-1])
	if killed.Load() == 0 {
		t.Fatal("no connection was terminated: the test proves nothing")
	}
	if n := r.terminate(); n == 0 { // between batches: the pool's idle connections
		t.Fatal("no idle connection to terminate")
	}
	second := r.publishN(40)
	r.waitCommitted(second[len(second)-1])
	r.wantSeen(append(first, second...))
	if got := r.metric("spine_projector_retries_total"); got == 0 {
		t.Error("no retry was counted although transactions were cut")
	}
}

// TestProjectorStopDrains: Stop lets the batch in flight commit, returns,
// and leaves the table exactly at the checkpoint; a restart continues with
// nothing lost or doubled, while producers keep publishing.
func TestProjectorStopDrains(t *testing.T) {
	r := newRig(t)
	inFlight, release := make(chan []streams.Message, 1), make(chan struct{})
	r.handler.beforeApply = func(call int64, msgs []streams.Message) {
		if call == 3 {
			inFlight <- msgs
			<-release
		}
	}

	var published atomic.Uint64
	quit, done := make(chan struct{}), make(chan struct{})
	go func() { // a producer that keeps going
		defer close(done)
		for i := 0; ; i++ {
			select {
			case <-quit:
				return
			default:
			}
			ack, err := r.js.Publish(context.Background(), "spine.session.s-"+strconv.Itoa(i%5)+".chunk", []byte("m"))
			if err != nil {
				t.Errorf("publish: %v", err)
				return
			}
			published.Store(ack.Sequence)
		}
	}()
	p1 := r.start(nil)

	var batch []streams.Message
	select {
	case batch = <-inFlight:
	case <-time.After(waitTimeout):
		t.Fatal("third batch never reached the handler")
	}
	stopped := make(chan struct{})
	go func() { stop(t, p1); close(stopped) }()
	close(release) // the batch in flight may now commit
	<-stopped
	if err := p1.Wait(); err != nil {
		t.Fatalf("Wait after Stop = %v", err)
	}

	ck := r.checkpoint()
	if inflight := batch[len(batch)-1].Seq; ck < inflight {
		t.Fatalf("checkpoint %d: the batch in flight (to %d) was dropped by Stop", ck, inflight)
	}
	if ck != p1.Checkpoint() {
		t.Fatalf("checkpoint %d, projector says %d", ck, p1.Checkpoint())
	}
	want := make([]uint64, ck)
	for i := range want {
		want[i] = uint64(i + 1)
	}
	r.wantSeen(want)
	if floor := r.consumer().AckFloor.Stream; floor > ck {
		t.Fatalf("ack floor %d is past the checkpoint %d", floor, ck)
	}

	r.start(nil)
	r.waitCommitted(ck + 20) // still flowing
	close(quit)
	<-done
	total := published.Load()
	r.waitCommitted(total)
	want = make([]uint64, total)
	for i := range want {
		want[i] = uint64(i + 1)
	}
	r.wantSeen(want)
	if got := r.handler.inserted.Load(); got != int64(total) {
		t.Fatalf("handler inserted %d rows for %d messages", got, total)
	}
}

// TestProjectorResumesFromCheckpoint: PostgreSQL's checkpoint decides where
// a projector resumes, whatever became of the durable consumer.
func TestProjectorResumesFromCheckpoint(t *testing.T) {
	cases := map[string]func(r *rig){
		"consumer deleted": func(r *rig) {
			if err := r.js.DeleteConsumer(r.t.Context(), streams.StreamSessions, projectorName); err != nil {
				r.t.Fatalf("DeleteConsumer: %v", err)
			}
		},
		"consumer ahead": func(r *rig) {
			// Something consumed and acked everything under the same name.
			if err := r.js.DeleteConsumer(r.t.Context(), streams.StreamSessions, projectorName); err != nil {
				r.t.Fatalf("DeleteConsumer: %v", err)
			}
			c, err := r.js.CreateOrUpdateConsumer(r.t.Context(), streams.StreamSessions, jetstream.ConsumerConfig{
				Durable: projectorName, AckPolicy: jetstream.AckAllPolicy})
			if err != nil {
				r.t.Fatalf("create consumer: %v", err)
			}
			batch, err := c.FetchNoWait(100)
			if err != nil {
				r.t.Fatalf("fetch: %v", err)
			}
			var last jetstream.Msg
			for m := range batch.Messages() {
				last = m
			}
			if last == nil {
				r.t.Fatal("nothing to fetch")
			}
			if err := last.DoubleAck(r.t.Context()); err != nil {
				r.t.Fatalf("ack: %v", err)
			}
		},
		"consumer left as is": func(*rig) {},
	}
	for name, tamper := range cases {
		t.Run(name, func(t *testing.T) {
			r := newRig(t)
			first := r.publishN(6)
			p1 := r.start(nil)
			r.waitCommitted(first[len(first)-1])
			stop(t, p1)
			second := r.publishN(5)
			tamper(r)

			r.start(nil)
			r.waitCommitted(second[len(second)-1])
			r.wantSeen(append(first, second...))
			if got := r.handler.inserted.Load(); got != 11 {
				t.Fatalf("handler inserted %d rows for 11 messages", got)
			}
		})
	}
}

// TestProjectorSkipsAtOrBelowCheckpoint: a message delivered again after
// its sequence was committed (by this or another instance) is skipped.
func TestProjectorSkipsAtOrBelowCheckpoint(t *testing.T) {
	r := newRig(t)
	var mu sync.Mutex
	var handed []uint64
	r.handler.beforeApply = func(_ int64, msgs []streams.Message) {
		mu.Lock()
		defer mu.Unlock()
		for _, m := range msgs {
			handed = append(handed, m.Seq)
		}
	}
	first := r.publishN(1)
	r.start(nil)
	r.waitCommitted(first[0]) // the consumer now stands at 2
	if _, err := r.conn().Exec(t.Context(), `UPDATE projector_checkpoints SET last_seq = 5 WHERE name = $1`, projectorName); err != nil {
		t.Fatalf("advance checkpoint: %v", err)
	}
	seqs := append(first, r.publishN(7)...)
	r.waitCommitted(seqs[len(seqs)-1])
	r.wantSeen(append([]uint64{1}, seqs[5:]...))
	mu.Lock()
	defer mu.Unlock()
	if slices.ContainsFunc(handed, func(s uint64) bool { return s > 1 && s <= 5 }) {
		t.Fatalf("handler was given %v; sequences up to the checkpoint 5 must be skipped", handed)
	}
	if got := r.metric("spine_projector_redelivered_skipped_total"); got != 4 {
		t.Fatalf("skipped metric %v, want 4", got)
	}
}

// TestProjectorStandbyTakesOver: two instances with one name never both
// apply; when the one leading stops, the other carries on from its
// checkpoint.
func TestProjectorStandbyTakesOver(t *testing.T) {
	r := newRig(t)
	first := r.publishN(10)
	leader := r.start(nil)
	r.waitCommitted(first[len(first)-1])
	r.start(nil) // the standby
	second := r.publishN(10)
	r.waitCommitted(second[len(second)-1])
	stop(t, leader)
	third := r.publishN(10)
	r.waitCommitted(third[len(third)-1])

	all := slices.Concat(first, second, third)
	r.wantSeen(all)
	if got := r.handler.inserted.Load(); got != int64(len(all)) {
		t.Fatalf("handler inserted %d rows for %d messages", got, len(all))
	}
}
